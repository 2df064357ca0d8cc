// model-grammars.ts: a model's vocabulary as the grammar engine sees it, and
// its compiled grammars, cached per model (compiling a JSON schema against
// a 150k vocabulary takes tens of milliseconds; a chat that asks for the
// same schema every turn pays it once).
//
// Each token is given to the engine as the bytes the decode loop streams
// for it (Tokenizer.tokenBytes), spelled in GPT-2's byte-level alphabet:
// the engine then matches the grammar against exactly the bytes the output
// will have, for every tokenizer (byte-level BPE, SentencePiece with its
// ▁ and <0xNN> byte tokens, a user's own). Control tokens have no bytes and
// so are given as empty strings, which the engine never allows inside the
// output; the model's end-of-generation tokens are passed explicitly as
// the stop tokens (its own guess misses <|im_end|>), and the engine allows
// them exactly where the grammar may end.
import type { CompiledGrammar, GrammarCompiler, TokenizerInfo } from '@mlc-ai/web-xgrammar';

import { invalidParameterError } from '../errors.js';
import type { DecodeModel } from '../generate/model.js';
import { byteLevelOfBytes } from '../tokenizers/byte-level.js';
import type { GrammarSpec, ResolvedGrammarSpec } from './grammar-spec.js';
import { engine, engineCall, type Engine } from './xgrammar.js';

/** A model's vocabulary and grammars on one engine instance. */
interface ModelGrammars {
  engine: Engine;
  info: TokenizerInfo;
  compiler: GrammarCompiler;
  compiled: Map<string, Promise<CompiledGrammar>>;
}

const perModel = new WeakMap<DecodeModel, Promise<ModelGrammars>>();
// The engine's objects live in WebAssembly memory, which the garbage
// collector does not see. A retired instance is left to the collector whole.
const freeWithModel = new FinalizationRegistry<Promise<ModelGrammars>>((grammars) => {
  void grammars.then((g) => {
    if (g.engine.retired) return;
    for (const compiled of g.compiled.values()) void compiled.then((c) => c.dispose(), () => {});
    g.compiler.dispose();
    g.info.dispose();
  }, () => {});
});

/** Each token's streamed bytes in the byte-level alphabet; '' for a token without bytes. */
export function encodedVocabulary(model: DecodeModel): string[] {
  const encoded = new Array<string>(model.vocabSize);
  for (let token = 0; token < model.vocabSize; token++) {
    const bytes: unknown = model.tokenizer.tokenBytes(token);
    if (!(bytes instanceof Uint8Array)) {
      throw invalidParameterError(`the tokenizer's tokenBytes(${token}) result`, "a Uint8Array of the token's UTF-8 bytes", bytes, 'type');
    }
    encoded[token] = byteLevelOfBytes(bytes);
  }
  return encoded;
}

// The model's grammars on the engine's current instance (made again on a
// fresh instance after the last one was retired).
async function modelGrammars(model: DecodeModel): Promise<ModelGrammars> {
  const on = await engine();
  let grammars = perModel.get(model);
  if (grammars && (await grammars.catch(() => undefined))?.engine !== on) grammars = undefined;
  if (!grammars) {
    grammars = (async () => {
      const encoded = encodedVocabulary(model);
      const stops = [...model.eosTokens];
      const info = await engineCall(on, 'The grammar engine could not read the vocabulary', () =>
        on.xgrammar.TokenizerInfo.createTokenizerInfo(encoded, 'byte_level', false, model.vocabSize, stops));
      const compiler = await engineCall(on, 'The grammar engine could not start', () => on.xgrammar.GrammarCompiler.createGrammarCompiler(info));
      return { engine: on, info, compiler, compiled: new Map() };
    })();
    const made = grammars;
    made.catch(() => perModel.get(model) === made && perModel.delete(model));  // a failure is not cached
    perModel.set(model, made);
    freeWithModel.register(model, made);
  }
  return grammars;
}

function compile(on: Engine, compiler: GrammarCompiler, spec: GrammarSpec): Promise<CompiledGrammar> {
  switch (spec.type) {
    case 'json':
      if (spec.schema === undefined) return engineCall(on, 'The grammar engine refused grammar (JSON)', () => compiler.compileBuiltinJSONGrammar());
      // One line, separators ", " and ": " (Python's json.dumps), no free
      // whitespace: the output is short and the grammar ends at its last brace.
      return engineCall(on, 'The grammar engine refused grammar.schema', () =>
        compiler.compileJSONSchema(JSON.stringify(spec.schema), false, -1, [', ', ': '], true));
    case 'regex':
      return engineCall(on, 'The grammar engine refused grammar.pattern', () =>
        compiler.compileStructuralTag({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } }));
    case 'ebnf':
      return engineCall(on, 'The grammar engine refused grammar.grammar', () => compiler.compileGrammar(spec.grammar, spec.root ?? 'root'));
  }
}

/** The spec compiled against the model's vocabulary, on the engine's current instance; cached per model and spec. */
export async function compiledGrammar(model: DecodeModel, resolved: ResolvedGrammarSpec): Promise<{ engine: Engine; compiled: CompiledGrammar }> {
  const grammars = await modelGrammars(model);
  let compiled = grammars.compiled.get(resolved.key);
  if (!compiled) {
    compiled = compile(grammars.engine, grammars.compiler, resolved.spec);
    compiled.catch(() => grammars.compiled.delete(resolved.key));
    grammars.compiled.set(resolved.key, compiled);
  }
  return { engine: grammars.engine, compiled: await compiled };
}
