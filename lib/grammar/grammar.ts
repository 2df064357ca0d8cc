// grammar.ts: a grammar compiled for one model, what generate()'s grammar
// option takes, and the matcher that walks it during one generation.
import type { CompiledGrammar, GrammarMatcher } from '@mlc-ai/web-xgrammar';

import { invalidParameterError } from '../errors.js';
import type { Constraint } from '../generate/constraint.js';
import type { DecodeModel } from '../generate/model.js';
import { resolveGrammarSpec, type GrammarSpec, type JsonSchema, type ResolvedGrammarSpec } from './grammar-spec.js';
import { compiledGrammar } from './model-grammars.js';
import { engineCall, GrammarError, type Engine } from './xgrammar.js';

const owner = Symbol('Grammar');

/**
 * A JSON schema, regex or EBNF grammar compiled against one model's
 * vocabulary. Pass it as the grammar option of generate(), Session or
 * ChatSession calls on that model; parse() reads what they generated.
 */
export class Grammar<T = unknown> {
  readonly #model: DecodeModel;
  readonly #resolved: ResolvedGrammarSpec;
  #compiled: { engine: Engine; compiled: CompiledGrammar };

  /** @internal Use createGrammar() or createGrammarForJsonSchema(). */
  constructor(key: typeof owner, model: DecodeModel, resolved: ResolvedGrammarSpec, compiled: { engine: Engine; compiled: CompiledGrammar }) {
    if (key !== owner) throw new TypeError('Use createGrammar(model, spec) or createGrammarForJsonSchema(model, schema)');
    this.#model = model;
    this.#resolved = resolved;
    this.#compiled = compiled;
  }

  /** What the grammar was made from. */
  get spec(): GrammarSpec {
    return this.#resolved.spec;
  }

  /** The model whose vocabulary the grammar was compiled for. */
  get model(): DecodeModel {
    return this.#model;
  }

  /**
   * A JSON grammar's output as a value (JSON.parse); other grammars' output
   * as it is. Text that stopped before the grammar was complete (stopReason
   * maxTokens, abort, a stop trigger) is a GrammarError saying so.
   */
  parse(text: string): T {
    if (typeof text !== 'string') throw invalidParameterError('text', 'a string', text, 'type');
    if (this.spec.type !== 'json') return text as T;
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new GrammarError('The text is not complete JSON (did generation stop before the grammar was complete?)', (error as Error).message);
    }
  }

  /** @internal A matcher for one generation, as the decode loop's constraint. */
  async openConstraint(model: DecodeModel): Promise<Constraint> {
    if (model !== this.#model) {
      throw invalidParameterError('grammar', 'a Grammar created for the model being generated with (a grammar is compiled against its vocabulary)', this, 'range');
    }
    // Compiled again if the engine instance it was compiled on was retired since.
    if (this.#compiled.engine.retired) this.#compiled = await compiledGrammar(model, this.#resolved);
    const { engine, compiled } = this.#compiled;
    const matcher = await engineCall(engine, 'The grammar engine could not start a matcher', () =>
      engine.xgrammar.GrammarMatcher.createGrammarMatcher(compiled, [...model.eosTokens]));
    return new GrammarConstraint(matcher, model.eosTokens);
  }
}

/** `spec` compiled for `model`; compiled once per model and spec. Throws GrammarError when the engine refuses it. */
export async function createGrammar<T = unknown>(model: DecodeModel, spec: GrammarSpec): Promise<Grammar<T>> {
  const resolved = resolveGrammarSpec(spec);
  return new Grammar<T>(owner, model, resolved, await compiledGrammar(model, resolved));
}

/** As node-llama-cpp's createGrammarForJsonSchema: JSON that validates against `schema`; parse() returns the value. */
export function createGrammarForJsonSchema<T = unknown>(model: DecodeModel, schema: JsonSchema): Promise<Grammar<T>> {
  if (schema === undefined) throw invalidParameterError('schema', 'a JSON schema (a plain object or a boolean)', schema, 'type');
  return createGrammar<T>(model, { type: 'json', schema });
}

/** The grammar option: a Grammar for this model, or a spec compiled (and cached) now. */
export async function grammarConstraint(model: DecodeModel, grammar: Grammar | GrammarSpec): Promise<Constraint> {
  const compiled = grammar instanceof Grammar ? grammar : await createGrammar(model, grammar);
  return compiled.openConstraint(model);
}

// XGrammar's matcher: allows the model's end tokens where the grammar may end.
class GrammarConstraint implements Constraint {
  readonly completeReason = 'grammarComplete';
  readonly #matcher: GrammarMatcher;
  readonly #stops: readonly number[];

  constructor(matcher: GrammarMatcher, stops: readonly number[]) {
    this.#matcher = matcher;
    this.#stops = stops;
  }

  get ended(): boolean {
    return this.#matcher.isTerminated();
  }

  async next(): Promise<Uint32Array | null> {
    if (this.#matcher.isTerminated()) return null;
    const bits = await this.#matcher.getNextTokenBitmask();
    const mask = new Uint32Array(bits.buffer, bits.byteOffset, bits.length);
    return this.#onlyStops(mask) ? null : mask;
  }

  accept(token: number): boolean {
    return this.#matcher.acceptToken(token);
  }

  rollBack(count: number): void {
    if (count > 0) this.#matcher.rollBack(count);
  }

  dispose(): void {
    this.#matcher.dispose();
  }

  // The grammar is complete when only an end token may follow: generation
  // stops there rather than sampling one.
  #onlyStops(mask: Uint32Array): boolean {
    const saved = this.#stops.map((t) => mask[t >>> 5]);
    for (const t of this.#stops) mask[t >>> 5] &= ~(1 << (t & 31));
    const any = mask.some((word) => word !== 0);
    this.#stops.forEach((t, i) => (mask[t >>> 5] = saved[i]));
    return !any;
  }
}
