// js-sampler.ts: SAMPLING-SPEC.md in TypeScript, giving the native
// sampler's tokens. Straightforward rather than fast: it sorts where the
// native sampler selects on keys, but it sums masses and computes scores in
// the same order and precision, which is what makes the tokens agree.
import { penaltiesOn, type ResolvedSampling } from '../sampling-options.js';
import { halfFromNumber, sanitisedHalfValues } from './float16.js';
import { GUMBEL_MAX, mdExp, mdLogAny, noiseKey, tokenNoise } from './noise.js';

const f = Math.fround;
export const NO_TOKEN = 0xffffffff;
const FLOAT32_MAX = f(3.4028234663852886e38);

/** Step 0 for one value already in the row's type: NaN -> -inf, +inf -> largest finite. */
function sanitise(value: number, isHalf: boolean): number {
  if (Number.isNaN(value)) return -Infinity;
  if (value === Infinity) return isHalf ? 65504 : FLOAT32_MAX;
  return value;
}

/** A float32 result rounded into the row's type, then sanitised again. */
function roundLogit(value: number, isHalf: boolean): number {
  if (!isHalf) return sanitise(f(value), false);
  return sanitisedHalfValues()[halfFromNumber(value)];
}

function sanitisedRow(logits: Float32Array | Uint16Array): Float32Array {
  if (logits instanceof Uint16Array) {
    const table = sanitisedHalfValues();
    const z = new Float32Array(logits.length);
    for (let i = 0; i < logits.length; i++) z[i] = table[logits[i]];
    return z;
  }
  const z = Float32Array.from(logits);
  for (let i = 0; i < z.length; i++) z[i] = sanitise(z[i], false);
  return z;
}

/** Steps 1-2 in place: token bias, then penalties once per distinct token. */
function applyEdits(z: Float32Array, s: ResolvedSampling, isHalf: boolean): void {
  const seen = new Set<number>();
  for (let i = 0; i < s.biasTokens.length; i++) {
    const token = s.biasTokens[i];
    if (token >= z.length || seen.has(token)) continue;
    seen.add(token);
    z[token] = roundLogit(f(z[token] + s.biasValues[i]), isHalf);
  }
  if (!penaltiesOn(s)) return;
  const counts = new Map<number, number>();
  for (const token of s.window) if (token < z.length) counts.set(token, (counts.get(token) ?? 0) + 1);
  const r = s.repeatPenalty;
  for (const [token, count] of counts) {
    const zt = z[token];
    const y = r === 1 ? zt : zt > 0 ? f(zt / r) : f(zt * r);
    // The count is an integer, converted to float32 before the product, as
    // the C++ sampler and the kernels do (exact up to 2^24, rounded alike above).
    const offset = f(f(f(count) * s.frequencyPenalty) + s.presencePenalty);
    z[token] = roundLogit(f(y - offset), isHalf);
  }
}

/** tau_p over the values `sortedDesc` (S_k, sorted descending). */
function topPThreshold(sortedDesc: Float32Array, end: number, max: number, tf: number, p: number): number {
  const weight = (v: number) => mdExp(f(f(v - max) / tf));
  const levels: Array<[value: number, mass: number]> = [];
  let total = 0;
  for (let i = 0; i < end;) {
    let j = i;
    while (j < end && sortedDesc[j] === sortedDesc[i]) j++;
    const mass = (j - i) * weight(sortedDesc[i]);
    levels.push([sortedDesc[i], mass]);
    total += mass;
    i = j;
  }
  const target = p * total;
  let cumulative = 0;
  for (const [value, mass] of levels) {
    cumulative += mass;
    if (cumulative >= target) return value;
  }
  return levels[levels.length - 1][0];
}

/** Steps 3-5: the value a token must reach to stay (top-k, top-p, min-p). */
function keepThreshold(z: Float32Array, max: number, s: ResolvedSampling): number {
  const n = z.length;
  const tf = s.unitFilterTemperature ? 1 : s.temperature;
  let tau = -Infinity;
  const topKOn = s.topK > 0 && s.topK < n;
  if (topKOn || s.topP < 1) {
    const sortedDesc = Float32Array.from(z).sort().reverse();
    const tauK = topKOn ? sortedDesc[s.topK - 1] : -Infinity;
    let end = n;
    while (end > 0 && sortedDesc[end - 1] < tauK) end--;
    tau = tauK;
    if (s.topP < 1) tau = Math.max(tau, topPThreshold(sortedDesc, end, max, tf, s.topP));
  }
  if (s.minP > 0) tau = Math.max(tau, f(max + f(tf * mdLogAny(s.minP))));
  return tau;
}

/**
 * The distribution the sampler draws from (SAMPLING-SPEC): over the tokens
 * the filters keep, softmax(z / temperature) of the edited logits, in
 * double precision; at temperature 0 all on the argmax. Null when every
 * logit is -Infinity. Speculative rejection sampling reads it.
 */
export function samplingDistribution(logits: Float32Array | Uint16Array, s: ResolvedSampling): Float64Array | null {
  const z = editedLogits(logits, s);
  let argmax = 0;
  for (let i = 1; i < z.length; i++) if (z[i] > z[argmax]) argmax = i;
  const max = z[argmax];
  if (max === -Infinity) return null;
  const p = new Float64Array(z.length);
  if (s.temperature === 0) {
    p[argmax] = 1;
    return p;
  }
  const tau = keepThreshold(z, max, s);
  let total = 0;
  for (let i = 0; i < z.length; i++) {
    if (z[i] >= tau && z[i] !== -Infinity) total += p[i] = Math.exp((z[i] - max) / s.temperature);
  }
  for (let i = 0; i < z.length; i++) p[i] /= total;
  return p;
}

/** Steps 0-2: the row every later step sees, as float32 values; a token the mask refuses is -Infinity. */
export function editedLogits(logits: Float32Array | Uint16Array, s: ResolvedSampling): Float32Array {
  const z = sanitisedRow(logits);
  applyEdits(z, s, logits instanceof Uint16Array);
  const mask = s.mask;
  if (mask) for (let t = 0; t < z.length; t++) if ((mask[t >>> 5] & (1 << (t & 31))) === 0) z[t] = -Infinity;
  return z;
}

/** The sampled token, or NO_TOKEN when every logit is -Infinity. */
export function sampleJs(logits: Float32Array | Uint16Array, s: ResolvedSampling): number {
  const z = editedLogits(logits, s);
  const n = z.length;

  let argmax = 0;
  for (let i = 1; i < n; i++) if (z[i] > z[argmax]) argmax = i;
  const max = z[argmax];
  if (max === -Infinity) return NO_TOKEN;
  if (s.temperature === 0) return argmax;

  const t = s.temperature;
  const tau = keepThreshold(z, max, s);

  // Step 6, skipping tokens that cannot reach the best score (see noise_argmax.h).
  const key = noiseKey(s.seed, s.position);
  const tMaxNoise = f(t * GUMBEL_MAX);
  let bestIndex = argmax;
  let best = f(max + f(t * tokenNoise(key, argmax)));
  const windowOf = (b: number) => {
    const limit = f(f(b - tMaxNoise) - f((Math.abs(b) + tMaxNoise) * 2 ** -20));
    return Number.isFinite(limit) ? Math.max(limit, tau) : tau;
  };
  let window = windowOf(best);
  for (let i = 0; i < n; i++) {
    if (z[i] < window || i === bestIndex) continue;
    const score = f(z[i] + f(t * tokenNoise(key, i)));
    if (score > best || (score === best && i < bestIndex)) {
      best = score;
      bestIndex = i;
      window = windowOf(best);
    }
  }
  return bestIndex;
}
