// sampling-options.ts: the options of one sampling step, their defaults,
// and their validation into the exact values every backend uses.
import { TokenBias } from './token-bias.js';
import { invalidParameterError } from './errors.js';
import { isFiniteFloat32, isNumber, isPlainObject, isUint32, UINT32_MAX } from './predicates.js';

export type BackendChoice = 'auto' | 'metal' | 'emulated' | 'native' | 'js';
export type FilterTemperature = 'sampling' | 'unit';

export interface RepeatPenaltyOptions {
  /** Divides positive and multiplies negative logits of recent tokens; 1 is off. Default 1.1. */
  penalty?: number;
  /** How many of the most recent tokens of `history` are penalised. Default 64. */
  lastTokens?: number;
  /** Subtracted once per occurrence in the window. Default 0. */
  frequencyPenalty?: number;
  /** Subtracted once per distinct token in the window. Default 0. */
  presencePenalty?: number;
}

/** Raw logit additions by token id: a finite number, or -Infinity (a ban). */
export type LogitBias = ReadonlyMap<number, number> | Readonly<Record<number, number>>;

export interface SampleOptions {
  /** 0 is greedy (argmax). Default 0. */
  temperature?: number;
  /** Keep the k highest logits (ties included); 0 or >= vocabulary size is off. Default 40. */
  topK?: number;
  /** Keep the smallest set of values whose probability reaches p; 1 is off. Default 0.95. */
  topP?: number;
  /** Drop tokens below minP times the top probability; 0 is off. Default 0. */
  minP?: number;
  /** uint32 noise seed. Default: a fresh random seed on every call. */
  seed?: number;
  /** uint32 sequence position of the token being sampled; selects the noise. Default 0. */
  position?: number;
  /** The tokens so far (prompt and generated), oldest first; used by repeatPenalty. */
  history?: ArrayLike<number>;
  /** Penalties on recent tokens, or false (default) for none. */
  repeatPenalty?: false | RepeatPenaltyOptions;
  /** Added to logits before anything else: token id -> finite bias or -Infinity (a ban). */
  logitBias?: LogitBias;
  /**
   * node-llama-cpp's TokenBias (new TokenBias(model).set(text or ids, bias)),
   * or a function that returns one: its biases join logitBias's (a token
   * both name gets tokenBias's).
   */
  tokenBias?: TokenBias | (() => TokenBias);
  /** Whether top-p and min-p see the tempered distribution ('sampling', default) or T = 1 ('unit'). */
  filterTemperature?: FilterTemperature;
  /**
   * The tokens allowed (a grammar's): a bitmask of ceil(vocabSize / 32)
   * words, bit t % 32 of word t >> 5 set when token t is allowed. A token
   * not allowed is -Infinity before anything else (bias, penalties,
   * filters). Default: every token.
   */
  mask?: Uint32Array;
  /**
   * Which implementation runs the step. Default 'auto': metal when it runs here and the
   * kernels take these inputs, else native if the addon loaded, else js.
   */
  backend?: BackendChoice;
}

/** Sampling options of a chain: the chain sets position and history per token, the device is the chain's, masks are bound as buffers. */
export type ChainSamplingOptions = Omit<SampleOptions, 'position' | 'history' | 'backend' | 'mask'>;

/** The defaults, following node-llama-cpp where it has one. */
export const SAMPLING_DEFAULTS = Object.freeze({
  temperature: 0,
  topK: 40,
  topP: 0.95,
  minP: 0,
  position: 0,
  filterTemperature: 'sampling' as FilterTemperature,
  backend: 'auto' as BackendChoice,
  repeatPenalty: Object.freeze({ penalty: 1.1, lastTokens: 64, frequencyPenalty: 0, presencePenalty: 0 }),
});

/** Options after validation: real values already rounded to float32, lists packed. */
export interface ResolvedSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  position: number;
  unitFilterTemperature: boolean;
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  lastTokens: number;
  /** The penalty window: the last `lastTokens` history tokens (empty when penalties are off). */
  window: Uint32Array;
  biasTokens: Uint32Array;
  biasValues: Float32Array;
  /** The allowed tokens' bitmask, when given. */
  mask: Uint32Array | undefined;
  backend: BackendChoice;
}

/** Whether the penalty values change anything (md_penalties_on in metal/md_sampling.h). */
export function penaltiesOn(s: ResolvedSampling): boolean {
  return s.repeatPenalty !== 1 || s.frequencyPenalty !== 0 || s.presencePenalty !== 0;
}

/**
 * Whether the token is the row's argmax (masked tokens aside): greedy, and
 * neither a bias nor a penalty edits the row. `historyLength`: the tokens
 * the penalties would see (the window of one row; a chain table's history
 * grows, so it passes Infinity). The twin of md_plain_greedy
 * (metal/md_sampling.h), the one definition of "plain greedy".
 */
export function plainGreedy(s: ResolvedSampling, historyLength: number = s.window.length): boolean {
  const penalties = Math.min(historyLength, s.lastTokens) > 0 && penaltiesOn(s);
  return s.temperature === 0 && s.biasTokens.length === 0 && !penalties;
}

/**
 * Whether FlashSampling (the LM head fused with the pick) gives these
 * options' token: it reads each logit once, as it is computed, so only
 * greedy and temperature-only sampling, either with a bias, with no
 * penalty and no filter (top-k, top-p and min-p off) and no mask.
 */
export function fusedHeadSamples(s: ResolvedSampling, vocabSize: number): boolean {
  if ((s.lastTokens > 0 && penaltiesOn(s)) || s.mask !== undefined) return false;
  if (s.temperature === 0) return true;
  return (s.topK === 0 || s.topK >= vocabSize) && s.topP >= 1 && s.minP === 0;
}

export const SAMPLE_OPTION_NAMES = new Set([
  'temperature',
  'topK',
  'topP',
  'minP',
  'seed',
  'position',
  'history',
  'repeatPenalty',
  'logitBias',
  'tokenBias',
  'filterTemperature',
  'mask',
  'backend',
]);
const REPEAT_PENALTY_NAMES = new Set(['penalty', 'lastTokens', 'frequencyPenalty', 'presencePenalty']);

export function checkKnownKeys(object: Record<string, unknown>, known: Set<string>, where: string): void {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) {
      throw new TypeError(`Unknown option ${where}${key}; the options are: ${[...known].join(', ')}`);
    }
  }
}

function float32Option(name: string, value: unknown, fallback: number, inRange: (x: number) => boolean, expected: string): number {
  if (value === undefined) return Math.fround(fallback);
  if (!isNumber(value)) throw invalidParameterError(name, expected, value, 'type');
  if (!isFiniteFloat32(value) || !inRange(Math.fround(value))) throw invalidParameterError(name, expected, value, 'range');
  return Math.fround(value);
}

function uint32Option(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const expected = `an integer from 0 to ${UINT32_MAX}`;
  if (!isNumber(value)) throw invalidParameterError(name, expected, value, 'type');
  if (!isUint32(value)) throw invalidParameterError(name, expected, value, 'range');
  return value;
}

export function enumOption<T extends string>(name: string, value: unknown, fallback: T, allowed: readonly T[]): T {
  if (value === undefined) return fallback;
  const expected = `one of ${allowed.map((a) => `'${a}'`).join(', ')}`;
  if (typeof value !== 'string') throw invalidParameterError(name, expected, value, 'type');
  if (!allowed.includes(value as T)) throw invalidParameterError(name, expected, value, 'range');
  return value as T;
}

/** The largest temperature (MD_MAX_TEMPERATURE in metal/md_sampling.h; the addon exports it, a test compares). */
export const MAX_TEMPERATURE = 1e30;

function resolveHistoryWindow(history: unknown, lastTokens: number): Uint32Array {
  if (history === undefined) return new Uint32Array(0);
  const isArrayLike =
    Array.isArray(history) ||
    history instanceof Uint32Array ||
    history instanceof Int32Array ||
    history instanceof Uint16Array ||
    history instanceof Uint8Array;
  if (!isArrayLike) throw invalidParameterError('history', 'an array or integer typed array of token ids', history, 'type');
  const all = history as ArrayLike<number>;
  if (!(all instanceof Uint32Array)) {
    for (let i = 0; i < all.length; i++) {
      const token = all[i];
      if (!isUint32(token)) {
        throw invalidParameterError(`history[${i}]`, `a token id (an integer from 0 to ${UINT32_MAX})`, token, isNumber(token) ? 'range' : 'type');
      }
    }
  }
  const start = all.length - Math.min(all.length, lastTokens);
  return Uint32Array.from({ length: all.length - start }, (_, i) => all[start + i]);
}

// An object key names a token only in canonical decimal: Number() would
// also read '', ' 4 ', '0x5', '1e3' and '1.0', so two keys could name one
// token and a typo would bias a real one.
function tokenIdFromKey(key: string): number {
  if (/^(0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= UINT32_MAX) return Number(key);
  throw invalidParameterError('logitBias key', `a token id in decimal (0, 1, 2, ... up to ${UINT32_MAX})`, key, 'range');
}

const TOKEN_BIAS_EXPECTED = 'a TokenBias (new TokenBias(model).set(text or token ids, bias)) or a function that returns one';

// tokenBias's logits by token id: a TokenBias, or what a function returns.
function tokenBiasEntries(tokenBias: unknown): [number, number][] {
  if (tokenBias === undefined) return [];
  const value: unknown = typeof tokenBias === 'function' ? (tokenBias as () => unknown)() : tokenBias;
  if (value instanceof TokenBias) return [...value.logits().entries()];
  if (value instanceof Map || isPlainObject(value)) {
    throw invalidParameterError('tokenBias', `${TOKEN_BIAS_EXPECTED} (raw logit additions by token id are logitBias)`, value, 'type');
  }
  throw invalidParameterError(typeof tokenBias === 'function' ? "tokenBias's result" : 'tokenBias', TOKEN_BIAS_EXPECTED, value, 'type');
}

function resolveTokenBias(logitBias: unknown, tokenBias: unknown): { biasTokens: Uint32Array; biasValues: Float32Array } {
  const fromTokenBias = tokenBiasEntries(tokenBias);
  if (logitBias === undefined && fromTokenBias.length === 0) return { biasTokens: new Uint32Array(0), biasValues: new Float32Array(0) };
  let entries: [unknown, unknown][];
  if (logitBias === undefined) entries = [];
  else if (logitBias instanceof Map) entries = [...logitBias.entries()];
  else if (isPlainObject(logitBias)) entries = Object.entries(logitBias).map(([k, v]) => [tokenIdFromKey(k), v]);
  else throw invalidParameterError('logitBias', 'a Map or a plain object of token id -> bias', logitBias, 'type');
  // The sampler keeps a repeated token's first bias: tokenBias's go first.
  entries = [...fromTokenBias, ...entries];

  const biasTokens = new Uint32Array(entries.length);
  const biasValues = new Float32Array(entries.length);
  entries.forEach(([token, bias], i) => {
    if (!isUint32(token)) {
      throw invalidParameterError('logitBias key', `a token id (an integer from 0 to ${UINT32_MAX})`, token, isNumber(token) ? 'range' : 'type');
    }
    const name = `logitBias[${token}]`;
    const expected = 'a finite number or -Infinity';
    if (!isNumber(bias)) throw invalidParameterError(name, expected, bias, 'type');
    if (!(isFiniteFloat32(bias) || bias === -Infinity)) throw invalidParameterError(name, expected, bias, 'range');
    biasTokens[i] = token;
    biasValues[i] = bias;
  });
  return { biasTokens, biasValues };
}

/** Validates `options` (throwing TypeError/RangeError naming the field) and fills defaults. */
export function resolveSampling(options: SampleOptions | undefined): ResolvedSampling {
  if (options === undefined) options = {};
  if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
  const o = options as Record<string, unknown>;
  checkKnownKeys(o, SAMPLE_OPTION_NAMES, '');
  const d = SAMPLING_DEFAULTS;

  const temperature = float32Option(
    'temperature',
    o.temperature,
    d.temperature,
    (x) => x >= 0 && x <= Math.fround(MAX_TEMPERATURE),
    `a number from 0 to ${MAX_TEMPERATURE}`,
  );
  const topK = uint32Option('topK', o.topK, d.topK);
  const topP = float32Option('topP', o.topP, d.topP, (x) => x > 0 && x <= 1, 'a number in (0, 1]');
  const minP = float32Option('minP', o.minP, d.minP, (x) => x >= 0 && x < 1, 'a number in [0, 1)');
  const seed = uint32Option('seed', o.seed, 0);
  const position = uint32Option('position', o.position, d.position);
  const filterTemperature = enumOption('filterTemperature', o.filterTemperature, d.filterTemperature, ['sampling', 'unit']);
  const backend = enumOption('backend', o.backend, d.backend, ['auto', 'metal', 'emulated', 'native', 'js']);

  let penalty = 1,
    frequencyPenalty = 0,
    presencePenalty = 0,
    lastTokens = 0;
  const rp = o.repeatPenalty;
  if (rp !== undefined && rp !== false) {
    if (!isPlainObject(rp)) throw invalidParameterError('repeatPenalty', 'false or an object', rp, 'type');
    checkKnownKeys(rp, REPEAT_PENALTY_NAMES, 'repeatPenalty.');
    const dp = d.repeatPenalty;
    penalty = float32Option('repeatPenalty.penalty', rp.penalty, dp.penalty, (x) => x > 0, 'a finite number > 0');
    lastTokens = uint32Option('repeatPenalty.lastTokens', rp.lastTokens, dp.lastTokens);
    frequencyPenalty = float32Option('repeatPenalty.frequencyPenalty', rp.frequencyPenalty, dp.frequencyPenalty, () => true, 'a finite number');
    presencePenalty = float32Option('repeatPenalty.presencePenalty', rp.presencePenalty, dp.presencePenalty, () => true, 'a finite number');
  }
  const window = resolveHistoryWindow(o.history, lastTokens);
  const mask = o.mask;
  if (mask !== undefined && !(mask instanceof Uint32Array)) {
    throw invalidParameterError('mask', 'a Uint32Array bitmask of ceil(vocabSize / 32) words', mask, 'type');
  }

  return {
    temperature,
    topK,
    topP,
    minP,
    seed: o.seed === undefined ? randomSeed() : seed,
    position,
    unitFilterTemperature: filterTemperature === 'unit',
    repeatPenalty: penalty,
    frequencyPenalty,
    presencePenalty,
    lastTokens,
    window,
    ...resolveTokenBias(o.logitBias, o.tokenBias),
    mask,
    backend,
  };
}

function randomSeed(): number {
  return (Math.random() * 0x100000000) >>> 0;
}
