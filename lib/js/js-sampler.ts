// js-sampler.ts: docs/sampling.md in TypeScript, giving the native
// sampler's tokens. It selects as the native sampler does (native/core):
// float16 rows through half-row.ts (block maxima, exact levels), float32
// rows on 2^16 coarse bins refined by sorting one bin; masses summed in
// the same order and precision, scores computed alike, so the tokens
// agree; greedy without edits reads the input without a copy; a call
// allocates nothing of the vocabulary's size.
import { penaltiesOn, plainGreedy, type ResolvedSampling } from '../sampling-options.js';
import { halfFromNumber, sanitisedHalfValues } from './float16.js';
import { halfKeepThreshold, halfOrderTable, sampleHalfRow } from './half-row.js';
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

/**
 * Steps 1-2: the tokens token bias and then penalties (once per distinct
 * token) change, with their new values; valueOf(t) is token t's value after
 * step 0.
 */
function editValues(s: ResolvedSampling, n: number, valueOf: (t: number) => number, isHalf: boolean): Map<number, number> {
  const edits = new Map<number, number>();
  const current = (t: number) => edits.get(t) ?? valueOf(t);
  const biased = new Set<number>();
  for (let i = 0; i < s.biasTokens.length; i++) {
    const token = s.biasTokens[i];
    if (token >= n || biased.has(token)) continue;
    biased.add(token);
    edits.set(token, roundLogit(f(current(token) + s.biasValues[i]), isHalf));
  }
  if (!penaltiesOn(s)) return edits;
  const counts = new Map<number, number>();
  for (const token of s.window) if (token < n) counts.set(token, (counts.get(token) ?? 0) + 1);
  const r = s.repeatPenalty;
  for (const [token, count] of counts) {
    const zt = current(token);
    const y = r === 1 ? zt : zt > 0 ? f(zt / r) : f(zt * r);
    // The count is an integer, converted to float32 before the product, as
    // the C++ sampler and the kernels do (exact up to 2^24, rounded alike above).
    const offset = f(f(f(count) * s.frequencyPenalty) + s.presencePenalty);
    edits.set(token, roundLogit(f(y - offset), isHalf));
  }
  return edits;
}

/** Steps 1-2 in place. */
function applyEdits(z: Float32Array, s: ResolvedSampling, isHalf: boolean): void {
  for (const [token, value] of editValues(s, z.length, (t) => z[t], isHalf)) z[token] = value;
}

// Scratch reused by every call on this thread: a sampling step allocates
// nothing of the vocabulary's size (the row copy, its half bits, the
// histograms), which at V = 128k would cost more than the arithmetic.
const scratch = { z: new Float32Array(0), counts: new Uint32Array(65536), mass: new Float64Array(65536) };

function scratchRow(n: number): Float32Array {
  if (scratch.z.length < n) scratch.z = new Float32Array(n);
  return scratch.z.subarray(0, n);
}

// A float32 value's bits in value order, the top 16 as a coarse bin (as native/core/logit_keys.h's keys).
function coarseBin(bits: number): number {
  return (bits & 0x80000000 ? (bits === 0x80000000 ? 0x80000000 : ~bits) : bits | 0x80000000) >>> 16;
}

interface EditedRow {
  z: Float32Array;
  max: number;
  argmax: number;
}

// The k-th largest value of a float32 row z (k < n), from a histogram of
// coarse value bins (float16 rows: half-row.ts).
function kthLargest(z: Float32Array, k: number): number {
  const u32 = new Uint32Array(z.buffer, z.byteOffset, z.length);
  const counts = scratch.counts;
  counts.fill(0);
  for (let i = 0; i < u32.length; i++) counts[coarseBin(u32[i])]++;
  let above = 0,
    bin = 0xffff;
  for (; bin > 0; bin--) {
    if (above + counts[bin] >= k) break;
    above += counts[bin];
  }
  // The boundary bin's values, sorted, finish the count.
  const inBin: number[] = [];
  for (let i = 0; i < u32.length; i++) if (coarseBin(u32[i]) === bin) inBin.push(z[i]);
  inBin.sort((a, b) => b - a);
  return inBin[k - above - 1];
}

// Levels (a value and its ties) from the top with their masses, count x
// float32 weight in double, summed from the top: native/core/top_p.h's
// order, so both find the same boundary.
function topPThreshold(row: EditedRow, floor: number, tf: number, p: number): number {
  const { z, max } = row;
  const weight = (v: number) => mdExp(f(f(v - max) / tf));
  // Few candidates are sorted into levels; many are summed per
  // coarse bin in index order (as the native sampler does), and the bin the
  // boundary falls in is sorted into levels.
  const candidates: number[] = [];
  for (let i = 0; i < z.length && candidates.length <= 4096; i++) if (z[i] >= floor) candidates.push(z[i]);
  if (candidates.length <= 4096) {
    candidates.sort((a, b) => b - a);
    return walkLevels(levelsOf(candidates, weight), p * levelsTotal(levelsOf(candidates, weight)), 0, floor);
  }
  const u32 = new Uint32Array(z.buffer, z.byteOffset, z.length);
  const mass = scratch.mass;
  mass.fill(0);
  for (let i = 0; i < z.length; i++) if (z[i] >= floor) mass[coarseBin(u32[i])] += weight(z[i]);
  let total = 0;
  for (let b = 0xffff; b >= 0; b--) if (mass[b] !== 0) total += mass[b];
  const target = p * total;
  let cumulative = 0;
  for (let b = 0xffff; b >= 0; b--) {
    if (mass[b] === 0) continue;
    if (cumulative + mass[b] < target && b > 0) {
      cumulative += mass[b];
      continue;
    }
    const inBin: number[] = [];
    for (let i = 0; i < z.length; i++) if (z[i] >= floor && coarseBin(u32[i]) === b) inBin.push(z[i]);
    inBin.sort((x, y) => y - x);
    return walkLevels(levelsOf(inBin, weight), target, cumulative, floor);
  }
  return floor;
}

function levelsOf(sortedDesc: number[], weight: (v: number) => number): Array<[value: number, mass: number]> {
  const levels: Array<[number, number]> = [];
  for (let i = 0; i < sortedDesc.length;) {
    let j = i;
    while (j < sortedDesc.length && sortedDesc[j] === sortedDesc[i]) j++;
    levels.push([sortedDesc[i], (j - i) * weight(sortedDesc[i])]);
    i = j;
  }
  return levels;
}

function levelsTotal(levels: Array<[number, number]>): number {
  let total = 0;
  for (const [, mass] of levels) total += mass;
  return total;
}

function walkLevels(levels: Array<[value: number, mass: number]>, target: number, cumulative: number, fallback: number): number {
  for (const [value, mass] of levels) {
    cumulative += mass;
    if (cumulative >= target) return value;
  }
  return levels.length > 0 ? levels[levels.length - 1][0] : fallback;
}

/** Step 5: the value a token must reach to stay (top-k, top-p, min-p), on the row the steps before left; float16 rows by half-row.ts. */
function keepThreshold(logits: Float32Array | Uint16Array, row: EditedRow, s: ResolvedSampling): number {
  if (logits instanceof Uint16Array) {
    const values = sanitisedHalfValues();
    return halfKeepThreshold(
      logits,
      s,
      editValues(s, logits.length, (t) => values[logits[t]], true),
    );
  }
  const n = row.z.length;
  const tf = s.unitFilterTemperature ? 1 : s.temperature;
  let tau = -Infinity;
  if (s.topK > 0 && s.topK < n) tau = kthLargest(row.z, s.topK);
  if (s.topP < 1) tau = Math.max(tau, topPThreshold(row, tau, tf, s.topP));
  if (s.minP > 0) tau = Math.max(tau, f(row.max + f(tf * mdLogAny(s.minP))));
  return tau;
}

/**
 * The distribution the sampler draws from (docs/sampling.md): over the tokens
 * the filters keep, softmax(z / temperature) of the edited logits, in
 * double precision; at temperature 0 all on the argmax. Null when every
 * logit is -Infinity. Speculative rejection sampling reads it.
 */
export function samplingDistribution(logits: Float32Array | Uint16Array, s: ResolvedSampling): Float64Array | null {
  const row = editRow(logits, s);
  const { z, max, argmax } = row;
  if (max === -Infinity) return null;
  const p = new Float64Array(z.length);
  if (s.temperature === 0) {
    p[argmax] = 1;
    return p;
  }
  const tau = keepThreshold(logits, row, s);
  let total = 0;
  for (let i = 0; i < z.length; i++) {
    if (z[i] >= tau && z[i] !== -Infinity) total += p[i] = Math.exp((z[i] - max) / s.temperature);
  }
  for (let i = 0; i < z.length; i++) p[i] /= total;
  return p;
}

// Steps 0-2 into the scratch row, with the argmax: the copy, then the few
// tokens bias and penalties touch, then the mask.
function editRow(logits: Float32Array | Uint16Array, s: ResolvedSampling): EditedRow {
  const n = logits.length;
  const isHalf = logits instanceof Uint16Array;
  const z = scratchRow(n);
  // The copy finds the argmax too; edits or a mask mean finding it again.
  let argmax = 0,
    max = -Infinity;
  if (isHalf) {
    const values = sanitisedHalfValues();
    for (let i = 0; i < n; i++) {
      const v = (z[i] = values[logits[i]]);
      if (v > max) {
        max = v;
        argmax = i;
      }
    }
  } else {
    for (let i = 0; i < n; i++) {
      const v = (z[i] = sanitise(logits[i], false));
      if (v > max) {
        max = v;
        argmax = i;
      }
    }
  }
  applyEdits(z, s, isHalf);
  const changed = new Set<number>();
  for (const t of s.biasTokens) if (t < n) changed.add(t);
  if (penaltiesOn(s)) for (const t of s.window) if (t < n) changed.add(t);
  const mask = s.mask;
  if (mask) for (let t = 0; t < n; t++) if ((mask[t >>> 5] & (1 << (t & 31))) === 0) z[t] = -Infinity;
  if (!mask && !changed.has(argmax)) {
    // Only the edited tokens can have overtaken the argmax.
    for (const t of changed) {
      if (z[t] > max || (z[t] === max && t < argmax)) {
        max = z[t];
        argmax = t;
      }
    }
  } else if (mask || changed.size > 0) {
    argmax = 0;
    max = z[0];
    for (let i = 1; i < n; i++) {
      if (z[i] > max) {
        max = z[i];
        argmax = i;
      }
    }
  }
  return { z, max, argmax };
}

// Greedy with nothing to edit: the first index of the largest sanitised
// value, read from the input (no copy of the row).
function plainArgmax(logits: Float32Array | Uint16Array): { max: number; argmax: number } {
  let argmax = 0;
  if (logits instanceof Uint16Array) {
    const order = halfOrderTable();
    let best = order[logits[0]];
    for (let i = 1; i < logits.length; i++) {
      const o = order[logits[i]];
      if (o > best) {
        best = o;
        argmax = i;
      }
    }
    return { max: sanitisedHalfValues()[logits[argmax]], argmax };
  }
  let max = sanitise(logits[0], false);
  for (let i = 1; i < logits.length; i++) {
    let v = logits[i];
    if (v === Infinity) v = FLOAT32_MAX; // step 0; NaN is never greater
    if (v > max) {
      max = v;
      argmax = i;
    }
  }
  return { max: sanitise(max, false), argmax };
}

/** Steps 0-2: the row every later step sees, as float32 values (a copy); a token the mask refuses is -Infinity. */
export function editedLogits(logits: Float32Array | Uint16Array, s: ResolvedSampling): Float32Array {
  return editRow(logits, s).z.slice();
}

/** The sampled token, or NO_TOKEN when every logit is -Infinity. */
export function sampleJs(logits: Float32Array | Uint16Array, s: ResolvedSampling): number {
  if (plainGreedy(s) && !s.mask) {
    const { max, argmax } = plainArgmax(logits);
    return max === -Infinity ? NO_TOKEN : argmax;
  }
  if (logits instanceof Uint16Array) {
    const values = sanitisedHalfValues();
    return (
      sampleHalfRow(
        logits,
        s,
        editValues(s, logits.length, (t) => values[logits[t]], true),
      ) ?? NO_TOKEN
    );
  }
  const row = editRow(logits, s);
  const { z, max, argmax } = row;
  const n = z.length;
  if (max === -Infinity) return NO_TOKEN;
  if (s.temperature === 0) return argmax;

  const t = s.temperature;
  const tau = keepThreshold(logits, row, s);

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
