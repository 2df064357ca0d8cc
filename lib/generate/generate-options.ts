// generate-options.ts: the options of one generate() call, validated before
// any work with the same error shape as sample()'s. Names follow
// node-llama-cpp's.
import { invalidParameterError } from '../errors.js';
import { resolveChainOptions } from '../gpu/chain.js';
import { isInteger, isPlainObject } from '../predicates.js';
import {
  checkKnownKeys,
  enumOption,
  resolveSampling,
  SAMPLE_OPTION_NAMES,
  type BackendChoice,
  type ResolvedSampling,
  type SampleOptions,
} from '../sampling-options.js';
import { Grammar } from '../grammar/grammar.js';
import { resolveGrammarSpec, type GrammarSpec } from '../grammar/grammar-spec.js';
import type { MaskState, TokenMask } from './constraint.js';
import { resolveSpeculative, type ResolvedSpeculative, type SpeculativeOptions } from './speculative.js';
import { resolveContextShift, type ContextShiftOptions, type ResolvedContextShift } from './context-shift.js';

/** One generated token and the text it releases ('' while a character or a possible stop trigger is incomplete). */
export interface GeneratedToken {
  token: number;
  text: string;
  /** The token's position in the session's sequence (when it was handed out: a context shift moves tokens down). */
  position: number;
}

export type { MaskState, TokenMask };

export interface GenerateOptions extends Omit<SampleOptions, 'position' | 'history' | 'backend' | 'mask'> {
  /** The most tokens to generate; 0 evaluates the prompt and generates nothing. Default: until the context is full. */
  maxTokens?: number;
  /** Aborting stops generation at the next token: generate rejects with an AbortError, or see stopOnAbortSignal. */
  signal?: AbortSignal;
  /** On abort, resolve with what was generated so far (stopReason 'abort') instead of rejecting. Default false. */
  stopOnAbortSignal?: boolean;
  /** Stop when the text contains one of these; the text before it is kept, the trigger is not. */
  customStopTriggers?: readonly string[];
  /** Called for each token as it is released; returning false stops generation after it. */
  onToken?: (token: GeneratedToken) => void | boolean;
  /** Called with each non-empty piece of text; returning false stops generation after it. */
  onTextChunk?: (text: string) => void | boolean;
  /** A per-token constraint of your own (the constrained path; see grammar for JSON, regex and EBNF). */
  tokenMask?: TokenMask;
  /**
   * The output follows this grammar: a Grammar from createGrammar() for this
   * model, or a spec ({ type: 'json', schema }, { type: 'regex', pattern },
   * { type: 'ebnf', grammar }) compiled and cached for the model on first
   * use. Generation stops when the grammar is complete (stopReason
   * 'grammarComplete').
   */
  grammar?: Grammar | GrammarSpec;
  /** Tokens per GPU submission on the chained paths. Default 16. */
  chunkSize?: number;
  /**
   * Speculative decoding: drafts verified exactly, so the tokens are the
   * ones generate() gives without it, with fewer forward passes when
   * drafts are right. true: the defaults (n-gram drafts of 5 tokens).
   */
  speculative?: boolean | SpeculativeOptions;
  /**
   * When the sequence fills its context, drop the oldest tokens after the
   * first `keep` and go on (llama.cpp's context shift: the KV cache moves,
   * its keys rotated to their new positions) instead of stopping with
   * 'contextFull'. true: the defaults. Default off.
   */
  contextShift?: boolean | ContextShiftOptions;
}

/** generate(model, ...) also opens the sequence it runs on. */
export interface OneShotGenerateOptions extends GenerateOptions {
  /** Where the model and sampler run. Default 'auto' (the model's choice: metal when it runs here, else native, else js). */
  backend?: BackendChoice;
  /** Tokens the sequence holds, prompt and generated; 'auto' (the default): see SessionOptions. */
  contextSize?: number | 'auto';
}

export interface ResolvedGenerate {
  /** The options the chain's sampling table takes (seed fixed, so the chain and the CPU draw the same). */
  chainSampling: Omit<SampleOptions, 'position' | 'history' | 'backend' | 'mask'>;
  sampling: ResolvedSampling;
  maxTokens: number;
  signal: AbortSignal | undefined;
  stopOnAbortSignal: boolean;
  customStopTriggers: readonly string[];
  onToken: ((token: GeneratedToken) => void | boolean) | undefined;
  onTextChunk: ((text: string) => void | boolean) | undefined;
  tokenMask: TokenMask | undefined;
  grammar: Grammar | GrammarSpec | undefined;
  chunkSize: number;
  speculative: ResolvedSpeculative | undefined;
  contextShift: ResolvedContextShift | undefined;
}

const LOOP_OPTION_NAMES = [
  'maxTokens',
  'signal',
  'stopOnAbortSignal',
  'customStopTriggers',
  'onToken',
  'onTextChunk',
  'tokenMask',
  'grammar',
  'chunkSize',
  'speculative',
  'contextShift',
];
// A call's position and history are the session's; its masks are tokenMask's or grammar's.
const SAMPLING_NAMES = [...SAMPLE_OPTION_NAMES].filter((name) => !['position', 'history', 'backend', 'mask'].includes(name));
const GENERATE_NAMES = new Set([...SAMPLING_NAMES, ...LOOP_OPTION_NAMES]);
const ONE_SHOT_NAMES = new Set([...GENERATE_NAMES, 'backend', 'contextSize']);

export const DEFAULT_CONTEXT_SIZE = 4096;
export const MAX_CONTEXT_SIZE = 1 << 24;

function functionOption<T>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw invalidParameterError(name, 'a function', value, 'type');
  return value as T;
}

function resolveTriggers(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidParameterError('customStopTriggers', 'an array of non-empty strings', value, 'type');
  return value.map((trigger, i) => {
    const name = `customStopTriggers[${i}]`;
    if (typeof trigger !== 'string') throw invalidParameterError(name, 'a non-empty string', trigger, 'type');
    if (trigger.length === 0) throw invalidParameterError(name, 'a non-empty string', trigger, 'range');
    return trigger;
  });
}

function resolveMaxTokens(value: unknown): number {
  if (value === undefined) return Infinity;
  const expected = 'an integer >= 0';
  if (!isInteger(value)) throw invalidParameterError('maxTokens', expected, value, typeof value === 'number' ? 'range' : 'type');
  if (value < 0) throw invalidParameterError('maxTokens', expected, value, 'range');
  return value;
}

/** The options of Session.generate: validated, defaults filled. */
export function resolveGenerate(options: unknown, names: Set<string> = GENERATE_NAMES): ResolvedGenerate {
  if (options === undefined) options = {};
  if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
  if (names === GENERATE_NAMES && ('backend' in options || 'contextSize' in options)) {
    throw new TypeError('backend and contextSize belong to the Session: pass them to new Session(model, { backend, contextSize })');
  }
  checkKnownKeys(options, names, '');
  const o = options as Record<string, unknown>;

  const samplingInput: Record<string, unknown> = {};
  for (const name of SAMPLING_NAMES) if (o[name] !== undefined) samplingInput[name] = o[name];
  const sampling = resolveSampling(samplingInput);

  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidParameterError('signal', 'an AbortSignal', signal, 'type');
  const stopOnAbortSignal = o.stopOnAbortSignal ?? false;
  if (typeof stopOnAbortSignal !== 'boolean') throw invalidParameterError('stopOnAbortSignal', 'a boolean', stopOnAbortSignal, 'type');

  const speculative = resolveSpeculative(o.speculative);
  const grammar = o.grammar === undefined || o.grammar instanceof Grammar ? o.grammar : resolveGrammarSpec(o.grammar).spec;
  if (grammar !== undefined && o.tokenMask !== undefined) {
    throw invalidParameterError('tokenMask', 'no tokenMask together with grammar (the grammar computes the masks)', o.tokenMask, 'range');
  }
  return {
    chainSampling: { ...samplingInput, seed: sampling.seed },
    sampling,
    maxTokens: resolveMaxTokens(o.maxTokens),
    signal,
    stopOnAbortSignal,
    customStopTriggers: resolveTriggers(o.customStopTriggers),
    onToken: functionOption('onToken', o.onToken),
    onTextChunk: functionOption('onTextChunk', o.onTextChunk),
    tokenMask: functionOption('tokenMask', o.tokenMask),
    grammar,
    chunkSize: resolveChainOptions({ chunkSize: o.chunkSize as number | undefined }).chunkSize,
    speculative,
    contextShift: resolveContextShift(o.contextShift),
  };
}

/** The options of generate(model, ...): a Session's options and a call's. */
export function resolveOneShot(options: unknown): { backend: BackendChoice; contextSize: number | 'auto'; generate: ResolvedGenerate } {
  const generate = resolveGenerate(options, ONE_SHOT_NAMES);
  const o = (options ?? {}) as Record<string, unknown>;
  return { ...resolveSessionOptions({ backend: o.backend, contextSize: o.contextSize }), generate };
}

/** A Session's options: where the model runs and how many tokens its sequence holds. */
export function resolveSessionOptions(options: unknown): { backend: BackendChoice; contextSize: number | 'auto' } {
  if (options === undefined) options = {};
  if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
  checkKnownKeys(options, new Set(['backend', 'contextSize']), '');
  const backend = enumOption('backend', options.backend, 'auto', ['auto', 'metal', 'emulated', 'native', 'js'] as const);
  const given = options.contextSize ?? 'auto';
  const expected = `'auto' or an integer from 2 to ${MAX_CONTEXT_SIZE}`;
  if (given !== 'auto' && !isInteger(given)) throw invalidParameterError('contextSize', expected, given, 'type');
  if (given !== 'auto' && (given < 2 || given > MAX_CONTEXT_SIZE)) throw invalidParameterError('contextSize', expected, given, 'range');
  const contextSize = given;
  return { backend, contextSize };
}
