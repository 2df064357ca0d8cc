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
import { engineCall, xgrammar } from './xgrammar.js';

interface ModelGrammars {
  info: TokenizerInfo;
  compiler: GrammarCompiler;
  compiled: Map<string, Promise<CompiledGrammar>>;
}

const perModel = new WeakMap<DecodeModel, Promise<ModelGrammars>>();
// The engine's objects live in WebAssembly memory, which the garbage collector does not see.
const freeWithModel = new FinalizationRegistry<Promise<ModelGrammars>>((grammars) => {
  void grammars.then((g) => {
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

function modelGrammars(model: DecodeModel): Promise<ModelGrammars> {
  let grammars = perModel.get(model);
  if (!grammars) {
    grammars = (async () => {
      const engine = await xgrammar();
      const encoded = encodedVocabulary(model);
      const stops = [...model.eosTokens];
      const info = await engineCall('The grammar engine could not read the vocabulary', () =>
        engine.TokenizerInfo.createTokenizerInfo(encoded, 'byte_level', false, model.vocabSize, stops));
      const compiler = await engine.GrammarCompiler.createGrammarCompiler(info);
      return { info, compiler, compiled: new Map() };
    })();
    grammars.catch(() => perModel.delete(model));  // a failure is not cached
    perModel.set(model, grammars);
    freeWithModel.register(model, grammars);
  }
  return grammars;
}

function compile(compiler: GrammarCompiler, spec: GrammarSpec): Promise<CompiledGrammar> {
  switch (spec.type) {
    case 'json':
      if (spec.schema === undefined) return engineCall('The grammar engine refused grammar (JSON)', () => compiler.compileBuiltinJSONGrammar());
      // One line, separators ", " and ": " (Python's json.dumps), no free
      // whitespace: the output is short and the grammar ends at its last brace.
      return engineCall('The grammar engine refused grammar.schema', () =>
        compiler.compileJSONSchema(JSON.stringify(spec.schema), false, -1, [', ', ': '], true));
    case 'regex':
      return engineCall('The grammar engine refused grammar.pattern', () =>
        compiler.compileStructuralTag({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } }));
    case 'ebnf':
      return engineCall('The grammar engine refused grammar.grammar', () => compiler.compileGrammar(spec.grammar, spec.root ?? 'root'));
  }
}

/** The spec compiled against the model's vocabulary; cached per model and spec. */
export async function compiledGrammar(model: DecodeModel, resolved: ResolvedGrammarSpec): Promise<CompiledGrammar> {
  const grammars = await modelGrammars(model);
  let compiled = grammars.compiled.get(resolved.key);
  if (!compiled) {
    compiled = compile(grammars.compiler, resolved.spec);
    compiled.catch(() => grammars.compiled.delete(resolved.key));
    grammars.compiled.set(resolved.key, compiled);
  }
  return compiled;
}
