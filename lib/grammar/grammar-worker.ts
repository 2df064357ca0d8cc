// grammar-worker.ts: the thread one grammar lives on (grammar-thread.ts
// starts it). It runs its own instance of the grammar engine: the model's
// vocabulary, the grammar compiled against it, and the matchers of the
// generations that use it. Compiling can take seconds (a string schema with
// minLength 1000 takes about 3 s against a 150k vocabulary) and nothing
// about a grammar says how long beforehand: here, a time limit or an abort
// ends the thread, and the event loop never waits on it.
//
// workerData: GrammarThreadData. Requests (GrammarRequest) -> replies; an
// engine refusal is a GrammarError (its fields cross to the main thread),
// after which the main thread ends this one: an engine instance that
// refused something is not to be trusted again (xgrammar.ts).
import { workerData } from 'node:worker_threads';

import { serveRequests } from '../request-worker.js';
import { byteLevelOfBytes } from '../tokenizers/byte-level.js';
import { grammarField, type GrammarSpec } from './grammar-spec.js';
import type { GrammarRequest, GrammarThreadData, MatcherState } from './grammar-protocol.js';
import { engine, engineCall, takeWarnings, type Engine } from './xgrammar.js';
import type { CompiledGrammar, GrammarMatcher } from '@mlc-ai/web-xgrammar';

const data = workerData as GrammarThreadData;

// Each token's bytes (offsets[t] .. offsets[t + 1] of bytes) in the byte-level alphabet.
function encodedVocabulary(): string[] {
  const bytes = new Uint8Array(data.vocabulary.bytes);
  const offsets = new Uint32Array(data.vocabulary.offsets);
  const encoded = new Array<string>(data.vocabSize);
  for (let token = 0; token < data.vocabSize; token++) encoded[token] = byteLevelOfBytes(bytes.subarray(offsets[token], offsets[token + 1]));
  return encoded;
}

function compileOn(on: Engine, spec: GrammarSpec): Promise<CompiledGrammar> {
  return (async () => {
    const info = await engineCall(on, 'The grammar engine could not read the vocabulary', () =>
      on.xgrammar.TokenizerInfo.createTokenizerInfo(encodedVocabulary(), 'byte_level', false, data.vocabSize, [...data.stops]),
    );
    const compiler = await engineCall(on, 'The grammar engine could not start', () => on.xgrammar.GrammarCompiler.createGrammarCompiler(info, false));
    const refused = `The grammar engine refused ${grammarField(spec)}`;
    switch (spec.type) {
      case 'json':
        if (spec.schema === undefined) return engineCall(on, refused, () => compiler.compileBuiltinJSONGrammar());
        // One line, separators ", " and ": " (Python's json.dumps), no free
        // whitespace: the output is short and the grammar ends at its last brace.
        return engineCall(on, refused, () => compiler.compileJSONSchema(JSON.stringify(spec.schema), false, -1, [', ', ': '], true));
      case 'regex':
        return engineCall(on, refused, () =>
          compiler.compileStructuralTag({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } }),
        );
      case 'ebnf':
        return engineCall(on, refused, () => compiler.compileGrammar(spec.grammar, spec.root ?? 'root'));
    }
  })();
}

let compiled: Promise<{ on: Engine; grammar: CompiledGrammar }> | undefined;
const matchers = new Map<number, GrammarMatcher>();

function matcher(id: number): GrammarMatcher {
  const found = matchers.get(id);
  if (!found) throw new Error(`The grammar thread has no matcher ${id} (a bug: please report it)`);
  return found;
}

function state(m: GrammarMatcher, extra: Partial<MatcherState> = {}): MatcherState {
  return { terminated: m.isTerminated(), warnings: takeWarnings(), ...extra };
}

// The matcher's state with its next mask: computed as soon as the state
// changes, while the main thread waits for this reply and the model is not
// yet running, rather than later beside the forward pass's threads.
async function stateWithMask(m: GrammarMatcher, extra: Partial<MatcherState> = {}): Promise<MatcherState> {
  if (m.isTerminated()) return state(m, { ...extra, mask: null });
  const bits = await m.getNextTokenBitmask();
  return state(m, { ...extra, mask: new Uint32Array(bits.buffer, bits.byteOffset, bits.length).slice() });
}

async function handle(request: GrammarRequest): Promise<unknown> {
  switch (request.op) {
    case 'compile':
      compiled ??= engine().then(async (on) => ({ on, grammar: await compileOn(on, data.spec) }));
      await compiled;
      return { warnings: takeWarnings() };
    case 'open': {
      if (!compiled) throw new Error('The grammar thread opened a matcher before compiling (a bug: please report it)');
      const { on, grammar } = await compiled;
      const m = await engineCall(on, 'The grammar engine could not start a matcher', () =>
        on.xgrammar.GrammarMatcher.createGrammarMatcher(grammar, [...data.stops]),
      );
      matchers.set(request.id, m);
      return stateWithMask(m);
    }
    case 'next':
      return stateWithMask(matcher(request.id));
    case 'accept': {
      const m = matcher(request.id);
      const accepted = m.acceptToken(request.token);
      return accepted ? stateWithMask(m, { accepted }) : state(m, { accepted });
    }
    case 'rollBack': {
      const m = matcher(request.id);
      if (request.count > 0) m.rollBack(request.count);
      return stateWithMask(m);
    }
    case 'close':
      matchers.get(request.id)?.dispose();
      matchers.delete(request.id);
      return { warnings: takeWarnings() };
  }
}

serveRequests<GrammarRequest>(handle, (value) => {
  const mask = (value as Partial<MatcherState>).mask;
  return mask ? [mask.buffer as ArrayBuffer] : [];
});
