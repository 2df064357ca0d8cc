// grammar.ts: a grammar compiled for one model, what generate()'s grammar
// option takes, and the matcher that walks it during one generation.
import { invalidParameterError } from '../errors.js';
import type { Constraint } from '../generate/constraint.js';
import type { DecodeModel } from '../generate/model.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import { GrammarError } from './grammar-error.js';
import type { SchemaType } from './schema-type.js';
import { resolveGrammarSpec, type GrammarSpec, type JsonSchema, type ResolvedGrammarSpec } from './grammar-spec.js';
import type { GrammarMatcherHandle, GrammarThread } from './grammar-thread.js';
import { compiledGrammar, type CompileLimits } from './model-grammars.js';

/** How createGrammar waits for the compile. */
export interface CreateGrammarOptions {
  /** Aborting it rejects with an AbortError; the compile is ended unless another caller waits for the same grammar. */
  signal?: AbortSignal;
  /** Milliseconds the compile may take (default 30,000; Infinity for no limit); past it, a GrammarError naming the limit. */
  timeoutMs?: number;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

function compileLimits(options: unknown): CompileLimits {
  if (options === undefined) return {};
  if (!isPlainObject(options)) throw invalidParameterError('options', 'an object { signal?, timeoutMs? }', options, 'type');
  checkKnownKeys(options, new Set(['signal', 'timeoutMs']), 'options.');
  const { signal, timeoutMs } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidParameterError('options.signal', 'an AbortSignal', signal, 'type');
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number')
      throw invalidParameterError('options.timeoutMs', `a number of milliseconds from 1 to ${MAX_TIMER_MS}, or Infinity`, timeoutMs, 'type');
    if (!(timeoutMs === Infinity || (Number.isInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS))) {
      throw invalidParameterError('options.timeoutMs', `a number of milliseconds from 1 to ${MAX_TIMER_MS}, or Infinity`, timeoutMs, 'range');
    }
  }
  return { signal, timeoutMs };
}

const owner = Symbol('Grammar');

/**
 * A JSON schema, regex or EBNF grammar compiled against one model's
 * vocabulary. Pass it as the grammar option of generate(), Session or
 * ChatSession calls on that model; parse() reads what they generated.
 */
export class Grammar<T = unknown> {
  readonly #model: DecodeModel;
  readonly #resolved: ResolvedGrammarSpec;
  #thread: GrammarThread;

  /** @internal Use createGrammar() or createGrammarForJsonSchema(). */
  constructor(key: typeof owner, model: DecodeModel, resolved: ResolvedGrammarSpec, thread: GrammarThread) {
    if (key !== owner) throw new TypeError('Use createGrammar(model, spec) or createGrammarForJsonSchema(model, schema)');
    this.#model = model;
    this.#resolved = resolved;
    this.#thread = thread;
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

  /**
   * @internal A matcher for one generation, as the decode loop's
   * constraint. A grammar whose thread was ended since (its engine failed,
   * or it was idle while many others were compiled) compiles again first.
   */
  async openConstraint(model: DecodeModel, signal?: AbortSignal): Promise<Constraint> {
    if (model !== this.#model) {
      throw invalidParameterError(
        'grammar',
        'a Grammar created for the model being generated with (a grammar is compiled against its vocabulary)',
        this,
        'range',
      );
    }
    if (this.#thread.ended) this.#thread = await compiledGrammar(model, this.#resolved, { signal });
    return new GrammarConstraint(await this.#thread.openMatcher(), model.eosTokens);
  }
}

/**
 * `spec` compiled for `model`, on a thread of its own (the event loop never
 * waits on it); compiled once per model and spec. Throws GrammarError when
 * the engine refuses it or it takes longer than `options.timeoutMs`.
 */
export async function createGrammar<T = unknown>(model: DecodeModel, spec: GrammarSpec, options?: CreateGrammarOptions): Promise<Grammar<T>> {
  const resolved = resolveGrammarSpec(spec);
  const limits = compileLimits(options);
  return new Grammar<T>(owner, model, resolved, await compiledGrammar(model, resolved, limits));
}

/** As node-llama-cpp's createGrammarForJsonSchema: JSON that validates against `schema`; parse() returns the value, typed from the schema when it is written inline. */
export function createGrammarForJsonSchema<const S extends JsonSchema>(
  model: DecodeModel,
  schema: S,
  options?: CreateGrammarOptions,
): Promise<Grammar<SchemaType<S>>>;
/** The same, with parse()'s type given: createGrammarForJsonSchema<MyType>(model, schema). */
export function createGrammarForJsonSchema<T>(model: DecodeModel, schema: JsonSchema, options?: CreateGrammarOptions): Promise<Grammar<T>>;
export function createGrammarForJsonSchema<T>(model: DecodeModel, schema: JsonSchema, options?: CreateGrammarOptions): Promise<Grammar<T>> {
  if (schema === undefined) throw invalidParameterError('schema', 'a JSON schema (a plain object or a boolean)', schema, 'type');
  return createGrammar<T>(model, { type: 'json', schema }, options);
}

/** The grammar option: a Grammar for this model, or a spec compiled (and cached) now; `signal` is the generation's. */
export async function grammarConstraint(model: DecodeModel, grammar: Grammar | GrammarSpec, signal?: AbortSignal): Promise<Constraint> {
  const compiled = grammar instanceof Grammar ? grammar : await createGrammar(model, grammar, { signal });
  return compiled.openConstraint(model, signal);
}

// The grammar's matcher: allows the model's end tokens where the grammar may end.
class GrammarConstraint implements Constraint {
  readonly completeReason = 'grammarComplete';
  readonly #matcher: GrammarMatcherHandle;
  readonly #stops: readonly number[];

  constructor(matcher: GrammarMatcherHandle, stops: readonly number[]) {
    this.#matcher = matcher;
    this.#stops = stops;
  }

  get ended(): boolean {
    return this.#matcher.terminated;
  }

  async next(): Promise<Uint32Array | null> {
    if (this.#matcher.terminated) return null;
    const mask = await this.#matcher.nextMask();
    return mask === null || this.#onlyStops(mask) ? null : mask;
  }

  accept(token: number): Promise<boolean> {
    return this.#matcher.accept(token);
  }

  rollBack(count: number): Promise<void> {
    return this.#matcher.rollBack(count);
  }

  dispose(): void {
    this.#matcher.close();
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
