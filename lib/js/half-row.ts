// half-row.ts: the TypeScript sampler's fast path for float16 rows, the
// native sampler's shape (native/core/row_passes.h) in V8: no float32 copy
// of the row, one pass for each 64-token block's largest value (as
// value-order bins: integers), the few tokens bias and penalties change kept
// aside, top-k from the tokens of the blocks that can hold the k largest,
// and the noisy draw skipping every block below what can still win. A
// language model's row has a few tokens far above the bulk, so most blocks
// are never read twice. The tokens are js-sampler.ts's own (the same
// levels, weights, sums and scores); the agreement tests hold both to the
// native sampler.
import type { ResolvedSampling } from '../sampling-options.js';
import { halfFromNumber, sanitisedHalfValues } from './float16.js';
import { GUMBEL_MAX, gumbel, hash, hashInverse, mdExp, mdLogAny, noiseKey, tokenNoise, uniform } from './noise.js';

const f = Math.fround;
const BLOCK = 64;
/** Top-p's light bound weighs each token by its bit pattern's group of 2^GROUP_SHIFT. */
const GROUP_SHIFT = 6;
/** The bin of -inf: sanitised NaNs and refused tokens land here. */
const NEG_INF_ORDER = halfOrder(0xfc00);

// Half bits in value order (+0 and -0 as one level): the bin of a value.
export function halfOrder(h: number): number {
  return h & 0x8000 ? (h === 0x8000 ? 0x8000 : 0xffff - h) : h | 0x8000;
}
export function halfOfOrder(o: number): number {
  return o & 0x8000 ? o & 0x7fff : 0xffff - o;
}

let orders: Uint16Array | undefined;
let orderValues: Float32Array | undefined;

/** Every half's bits -> the bin of its sanitised value (NaN -> -inf, +inf -> 65504). */
export function halfOrderTable(): Uint16Array {
  if (!orders) {
    orders = new Uint16Array(65536);
    for (let h = 0; h < 65536; h++) {
      const exponent = h & 0x7c00,
        mantissa = h & 0x3ff;
      const sanitised = exponent === 0x7c00 ? (mantissa !== 0 || h & 0x8000 ? 0xfc00 : 0x7bff) : h;
      orders[h] = halfOrder(sanitised);
    }
  }
  return orders;
}

// Every bin's value, non-decreasing in the bin (the NaN patterns' bins, which
// no sanitised value has, get the value of their neighbours), for searches.
function orderValueTable(): Float32Array {
  if (!orderValues) {
    const values = sanitisedHalfValues();
    orderValues = new Float32Array(65536);
    for (let o = 0; o < 65536; o++) orderValues[o] = values[halfOfOrder(o)];
    for (let o = 1; o < 65536; o++) if (orderValues[o] < orderValues[o - 1]) orderValues[o] = orderValues[o - 1];
  }
  return orderValues;
}

/** The lowest bin whose value is >= limit (65536 when none is). */
function orderAtLeast(limit: number): number {
  const values = orderValueTable();
  let lo = 0,
    hi = 65536;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] >= limit) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * A half's bin by arithmetic, without the table: exact for every half but
 * -0 (0x7fff here, 0x8000 in the table: use arithmeticFloor), +inf and the
 * NaNs (the table sanitises them). Only the noise pass's floor check uses
 * it, and there the differences cannot change a token: +inf and positive
 * NaNs pass the check and are then read through the table (65504 and -inf,
 * which cannot beat a best score above the floor); negative NaNs land
 * below -inf's bin, where nothing can win either. Block maxima that come
 * out as such a bin are recomputed through the table.
 */
function arithmeticOrder(h: number): number {
  return h ^ (((h >> 15) * 0x7fff) | 0x8000);
}

/** The floor to compare arithmetic bins against: -0's arithmetic bin sits just below +0's. */
function arithmeticFloor(floor: number): number {
  return floor === 0x8000 ? 0x7fff : floor;
}

// Scratch reused by every call on this thread.
const scratch = {
  blockMax: new Uint16Array(0),
  blockArithmetic: new Uint8Array(0),
  gathered: new Uint16Array(0),
  counts: new Uint32Array(65536),
  mass: new Float64Array(65536),
  groupWeight: new Float64Array(65536 >>> GROUP_SHIFT),
};

/** A float16 row after steps 0-2, read through its bins. */
interface ScannedHalfRow {
  halves: Uint16Array;
  mask: Uint32Array | undefined;
  /** Edited tokens -> their new bin (tokens the mask refuses are never here). */
  edited: Map<number, number>;
  blockMax: Uint16Array;
  /** 1 where the block's tokens may be compared with arithmeticOrder (no edits, no mask). */
  blockArithmetic: Uint8Array;
  blocks: number;
  top: number;
  argmax: number;
}

function orderOf(row: ScannedHalfRow, i: number, order: Uint16Array): number {
  const { mask } = row;
  if (mask && (mask[i >>> 5] & (1 << (i & 31))) === 0) return NEG_INF_ORDER;
  return row.edited.get(i) ?? order[row.halves[i]];
}

// The largest bin of block b (the slow form: edits and the mask).
function blockTop(row: ScannedHalfRow, b: number, order: Uint16Array): number {
  let top = 0;
  for (let i = b * BLOCK, end = Math.min(row.halves.length, i + BLOCK); i < end; i++) top = Math.max(top, orderOf(row, i, order));
  return top;
}

/**
 * Steps 0-2 and 3's argmax: each block's largest bin in one pass over the
 * input, then the edited tokens' blocks again. `edits(value(t)) -> value`
 * gives the tokens bias and penalties change (js-sampler.ts's applyEdits).
 */
function scanHalfRow(halves: Uint16Array, s: ResolvedSampling, edits: Map<number, number>): ScannedHalfRow {
  const n = halves.length,
    order = halfOrderTable();
  const blocks = Math.ceil(n / BLOCK);
  if (scratch.blockMax.length < blocks) {
    scratch.blockMax = new Uint16Array(blocks);
    scratch.blockArithmetic = new Uint8Array(blocks);
  }
  const { blockMax, blockArithmetic } = scratch;
  const mask = s.mask;
  const row: ScannedHalfRow = { halves, mask, edited: new Map(), blockMax, blockArithmetic, blocks, top: 0, argmax: 0 };
  for (let b = 0; b < blocks; b++) {
    const start = b * BLOCK,
      end = Math.min(n, start + BLOCK);
    let top = 0;
    if (mask) {
      for (let i = start; i < end; i++) {
        const o = (mask[i >>> 5] & (1 << (i & 31))) !== 0 ? order[halves[i]] : NEG_INF_ORDER;
        if (o > top) top = o;
      }
      blockArithmetic[b] = 0;
    } else {
      for (let i = start; i < end; i++) {
        const o = arithmeticOrder(halves[i]);
        if (o > top) top = o;
      }
      blockArithmetic[b] = 1;
      if (top === 0x7fff)
        top = 0x8000; // -0
      else if (top < NEG_INF_ORDER || top >= 0xfc00) top = blockTop(row, b, order); // NaNs, +inf
    }
    blockMax[b] = top;
  }
  for (const [t, value] of edits) {
    if (mask && (mask[t >>> 5] & (1 << (t & 31))) === 0) continue; // refused: -inf whatever its edits
    row.edited.set(t, halfOrder(halfFromNumber(value)));
  }
  for (const t of row.edited.keys()) blockArithmetic[Math.floor(t / BLOCK)] = 2; // marked once per block
  for (const t of row.edited.keys()) {
    const b = Math.floor(t / BLOCK);
    if (blockArithmetic[b] !== 2) continue;
    blockMax[b] = blockTop(row, b, order);
    blockArithmetic[b] = 0;
  }
  let top = 0,
    first = 0;
  for (let b = 0; b < blocks; b++) {
    if (blockMax[b] > top) {
      top = blockMax[b];
      first = b;
    }
  }
  row.top = top;
  // The block's first token at its largest bin (the block maxima are the table's bins, so one is).
  for (let i = first * BLOCK, end = Math.min(n, i + BLOCK); i < end; i++) {
    if (orderOf(row, i, order) === top) {
      row.argmax = i;
      break;
    }
  }
  return row;
}

/**
 * The bins of the tokens at or above `floor`, largest first, when few: the
 * tokens of the blocks whose largest bin reaches it. Undefined when more
 * than `limit` are (the caller counts the whole row instead).
 */
function gatherAtLeast(row: ScannedHalfRow, floor: number, limit: number): Uint16Array | undefined {
  const order = halfOrderTable(),
    n = row.halves.length;
  if (scratch.gathered.length < Math.min(n, limit)) scratch.gathered = new Uint16Array(Math.min(n, limit));
  const out = scratch.gathered;
  let count = 0;
  for (let b = 0; b < row.blocks; b++) {
    if (row.blockMax[b] < floor) continue;
    const plain = row.blockArithmetic[b] === 1;
    for (let i = b * BLOCK, end = Math.min(n, i + BLOCK); i < end; i++) {
      const o = plain ? order[row.halves[i]] : orderOf(row, i, order);
      if (o < floor) continue;
      if (count === limit) return undefined;
      out[count++] = o;
    }
  }
  return out.subarray(0, count).sort().reverse();
}

// The whole row's bins counted (top-p without top-k weighs every token).
function countAll(row: ScannedHalfRow): Uint32Array {
  const counts = scratch.counts,
    order = halfOrderTable(),
    { halves, mask } = row;
  counts.fill(0);
  if (mask) {
    for (let i = 0; i < halves.length; i++) counts[(mask[i >>> 5] & (1 << (i & 31))) !== 0 ? order[halves[i]] : NEG_INF_ORDER]++;
  } else {
    for (let i = 0; i < halves.length; i++) counts[order[halves[i]]]++;
  }
  for (const [t, o] of row.edited) {
    counts[order[halves[t]]]--;
    counts[o]++;
  }
  return counts;
}

// The k-th largest bin: a block's largest bin is a token's, so the k-th
// largest of the blocks' is a lower bound, and only blocks reaching it hold
// tokens above the answer.
function kthLargest(row: ScannedHalfRow, k: number): number {
  let bound = 0;
  if (row.blocks >= k) {
    const maxima = Uint16Array.from(row.blockMax.subarray(0, row.blocks)).sort();
    bound = maxima[row.blocks - k];
  }
  const gathered = gatherAtLeast(row, bound, 4096);
  if (gathered) return gathered[k - 1];
  const counts = countAll(row);
  let above = 0,
    bin = 0xffff;
  for (; bin > 0; bin--) {
    if (above + counts[bin] >= k) break;
    above += counts[bin];
  }
  return bin;
}

// Levels from the top with their masses, count x float32 weight in double,
// summed from the top (js-sampler.ts's and native/core/top_p.h's order).
// A bin's top-p weight at filter temperature tf: md_exp((value - max) / tf).
function topPWeight(row: ScannedHalfRow, tf: number): (o: number) => number {
  const values = orderValueTable(),
    max = values[row.top];
  return (o: number) => mdExp(f(f(values[o] - max) / tf));
}

function topPOrder(row: ScannedHalfRow, floor: number, tf: number, p: number): number {
  const max = orderValueTable()[row.top];
  const weight = topPWeight(row, tf);
  const gathered = floor > 0 ? gatherAtLeast(row, floor, 4096) : undefined;
  if (gathered) {
    const levels: number[] = [],
      masses: number[] = [];
    let total = 0;
    for (let i = 0; i < gathered.length;) {
      let j = i;
      while (j < gathered.length && gathered[j] === gathered[i]) j++;
      const mass = (j - i) * weight(gathered[i]);
      levels.push(gathered[i]);
      masses.push(mass);
      total += mass;
      i = j;
    }
    const target = p * total;
    let cumulative = 0;
    for (let l = 0; l < levels.length; l++) {
      cumulative += masses[l];
      if (cumulative >= target) return levels[l];
    }
    return levels[levels.length - 1];
  }
  if (floor === 0) {
    const fromTokens = topPFromHeavyTokens(row, weight, tf, p);
    if (fromTokens !== undefined) return fromTokens;
  }
  const counts = countAll(row);
  const heavy = topPFromHeavyLevels(counts, row.top, floor, weight, f(max + f(tf * -13.862943611198906)), p);
  if (heavy !== undefined) return heavy;
  return topPWholeRow(counts, row.top, floor, weight, p);
}

/**
 * topPFromHeavyTokens on a row without edits or mask, at filter
 * temperature `tf`: the bin it answers with, or undefined.
 * @internal exported for its test
 */
export function topPFromHeavyTokensOfRow(halves: Uint16Array, tf: number, p: number): number | undefined {
  const row = scanHalfRow(halves, { mask: undefined } as ResolvedSampling, new Map());
  return topPFromHeavyTokens(row, topPWeight(row, tf), tf, p);
}

/**
 * The whole-row walk's answer from the heaviest bins alone, without
 * counting the row (undefined when the light tokens might move it, or the
 * row has a mask): the heavy bins counted from the blocks that reach them,
 * the light mass bounded by reading each token's weight bound from a table
 * of its bit pattern's group (native/core/top_p.h does the same with
 * vectorised bounds). Bins down to the top's weight x 2^-16 are heavy.
 */
function topPFromHeavyTokens(row: ScannedHalfRow, weight: (o: number) => number, tf: number, p: number): number | undefined {
  const heavyValue = f(orderValueTable()[row.top] + f(tf * -11.090354888959125)); // the top's weight x 2^-16
  const heavyFrom = orderAtLeast(heavyValue),
    lowest = NEG_INF_ORDER + 1; // -inf weighs nothing
  if (row.mask || heavyFrom <= lowest || row.top - heavyFrom > 4096) return undefined;
  const gathered = gatherAtLeast(row, heavyFrom, 65536);
  if (!gathered) return undefined;
  const counts = scratch.counts;
  counts.fill(0, heavyFrom, row.top + 1);
  for (let i = 0; i < gathered.length; i++) counts[gathered[i]]++;
  return heavyWalksAgree(counts, row.top, heavyFrom, weight, lightBoundByGroups(row, heavyFrom, lowest, weight), p);
}

/**
 * An upper bound on the weight of the tokens below `heavyFrom`: each token
 * at the largest light weight of its bit pattern's group of 64 (64
 * neighbouring values of one sign), one table read per token; edited
 * tokens also at their edited bin's weight. Heavy tokens in a group that
 * straddles heavyFrom count too, at below 2^-16 of the top's weight.
 */
function lightBoundByGroups(row: ScannedHalfRow, heavyFrom: number, lowest: number, weight: (o: number) => number): number {
  const order = halfOrderTable(),
    groupWeight = scratch.groupWeight,
    size = 1 << GROUP_SHIFT;
  for (let g = 0; g < groupWeight.length; g++) {
    const first = g * size;
    // +inf is the top's bin (heavy); NaN and -inf weigh nothing.
    const special = (first >= 0x7c00 && first < 0x8000) || first >= 0xfc00;
    // A positive group's largest value is its last pattern, a negative one's its first.
    const o = special ? 0 : Math.min(first < 0x8000 ? order[first + size - 1] : order[first], heavyFrom - 1);
    groupWeight[g] = o < lowest ? 0 : weight(o);
  }
  const halves = row.halves,
    n = halves.length;
  // Four sums, so that each addition need not wait for the one before.
  let a = 0,
    b = 0,
    c = 0,
    d = 0,
    i = 0;
  for (; i + 4 <= n; i += 4) {
    a += groupWeight[halves[i] >>> GROUP_SHIFT];
    b += groupWeight[halves[i + 1] >>> GROUP_SHIFT];
    c += groupWeight[halves[i + 2] >>> GROUP_SHIFT];
    d += groupWeight[halves[i + 3] >>> GROUP_SHIFT];
  }
  for (; i < n; i++) a += groupWeight[halves[i] >>> GROUP_SHIFT];
  for (const o of row.edited.values()) if (o < heavyFrom && o >= lowest) a += weight(o);
  return a + b + (c + d);
}

/**
 * The whole-row walk's answer from the heaviest levels alone, when the
 * rest cannot change it (undefined when it might): native/core/top_p.h's
 * topPFromHeavyLevels, over bins. Heavy: bins whose value is at least
 * `heavyValue` (the top's weight x 2^-20); light: the bins below, whose
 * mass is bounded by runs of 256 bins, each at its largest weight. The
 * whole-row walk sums the heavy bins first, in the same order, and its
 * target lies between p x heavy and p x (heavy + light): the same stop
 * for both is its stop.
 * @internal exported for its test
 */
export function topPFromHeavyLevels(
  counts: Uint32Array,
  top: number,
  floor: number,
  weight: (o: number) => number,
  heavyValue: number,
  p: number,
): number | undefined {
  const heavyFrom = orderAtLeast(heavyValue),
    lowest = Math.max(floor, NEG_INF_ORDER + 1); // -inf weighs nothing
  if (heavyFrom <= lowest || top - heavyFrom > 4096) return undefined; // everything heavy, or too many levels to save anything
  let light = 0;
  for (let high = heavyFrom - 1; high >= lowest; high -= 256) {
    let tokens = 0;
    for (let b = Math.max(lowest, high - 255); b <= high; b++) tokens += counts[b];
    light += tokens * weight(high);
  }
  return heavyWalksAgree(counts, top, heavyFrom, weight, light, p);
}

/**
 * The walk's stop over the heavy bins (counts from `heavyFrom` to `top`)
 * when it is the same for every total from heavy to heavy + light, else
 * undefined: then it is the whole-row walk's stop, bit for bit.
 */
function heavyWalksAgree(
  counts: Uint32Array,
  top: number,
  heavyFrom: number,
  weight: (o: number) => number,
  light: number,
  p: number,
): number | undefined {
  const mass = scratch.mass;
  let heavy = 0;
  for (let b = top; b >= heavyFrom; b--) if (counts[b] !== 0) heavy += mass[b] = counts[b] * weight(b);
  // Margins as native's: the weights' last bit, the whole-row total's roundings.
  const atLow = walkFromTop(counts, top, heavyFrom, p * heavy);
  const atHigh = walkFromTop(counts, top, heavyFrom, p * ((heavy + light * (1 + 2 ** -20)) * (1 + 2 ** -30)));
  return atLow !== undefined && atLow === atHigh ? atLow : undefined;
}

/**
 * The walk over every bin from the top to `floor`: masses count x weight,
 * summed from the top, the first bin whose cumulative mass reaches p x the
 * total (the lowest occupied bin when rounding keeps it short).
 * @internal exported for its test
 */
export function topPWholeRow(counts: Uint32Array, top: number, floor: number, weight: (o: number) => number, p: number): number {
  const mass = scratch.mass;
  let total = 0,
    lowest = top;
  for (let b = top; b >= floor; b--) {
    if (counts[b] === 0) continue;
    total += mass[b] = counts[b] * weight(b);
    lowest = b;
  }
  return walkFromTop(counts, top, floor, p * total) ?? lowest;
}

// The first occupied bin from `top` down to `bottom` at which the masses
// (scratch.mass), summed from the top, reach target; undefined if none does.
function walkFromTop(counts: Uint32Array, top: number, bottom: number, target: number): number | undefined {
  const mass = scratch.mass;
  let cumulative = 0;
  for (let b = top; b >= bottom; b--) {
    if (counts[b] === 0) continue;
    cumulative += mass[b];
    if (cumulative >= target) return b;
  }
  return undefined;
}

// Step 5 as a bin: the lowest a token may have and stay (0: every token).
function keepOrder(row: ScannedHalfRow, s: ResolvedSampling): number {
  const n = row.halves.length,
    tf = s.unitFilterTemperature ? 1 : s.temperature;
  let tau = 0;
  if (s.topK > 0 && s.topK < n) tau = kthLargest(row, s.topK);
  if (s.topP < 1) tau = Math.max(tau, topPOrder(row, tau, tf, s.topP));
  if (s.minP > 0) tau = Math.max(tau, orderAtLeast(f(orderValueTable()[row.top] + f(tf * mdLogAny(s.minP)))));
  return tau;
}

/**
 * Step 5 for a float16 row with temperature > 0, as a value: a token stays
 * when its (edited) value is at least this. `edits` as for scanHalfRow.
 * The row must not be all -inf.
 */
export function halfKeepThreshold(halves: Uint16Array, s: ResolvedSampling, edits: Map<number, number>): number {
  const tau = keepOrder(scanHalfRow(halves, s, edits), s);
  return tau === 0 ? -Infinity : orderValueTable()[tau];
}

/**
 * The noise cells (bits >> 9 of a token's hash, md_uniform's cell) below
 * which a token's Gumbel noise is surely under `need`: u < exp(-exp(-need)),
 * with a cell to spare. The float32 noise is within 1e-6 of the exact
 * -ln(-ln(u)); callers leave 1e-4 below what a token needs.
 */
function cellsBelow(need: number): number {
  if (!(need > -2.8)) return 0; // -ln(-ln(2^-24)) = -2.81: no cell is below
  return Math.max(0, Math.floor((Math.exp(-Math.exp(-need)) * 16777216 - 1) / 2) - 1);
}

// The lowest of the few noise cells the draw inverts the hash for (16 cells,
// 8192 hashes), as native/core/noise_argmax.h.
const LOWEST_UNLIKELY_CELL = 2 ** 23 - 16;

/**
 * Steps 0-6 for a float16 row with temperature > 0 or edits: the token, or
 * undefined when every logit is -inf. `edits` as for scanHalfRow.
 */
export function sampleHalfRow(halves: Uint16Array, s: ResolvedSampling, edits: Map<number, number>): number | undefined {
  const row = scanHalfRow(halves, s, edits);
  if (row.top === NEG_INF_ORDER) return undefined;
  if (s.temperature === 0) return row.argmax;
  const n = halves.length,
    values = orderValueTable(),
    order = halfOrderTable();
  const max = values[row.top];
  const tau = keepOrder(row, s);

  // Step 6, skipping what cannot reach the best score: blocks and tokens
  // below the noise's bound (as the native sampler), and, in a block, tokens
  // whose noise cell alone shows their noise is too small (the hash is cheap,
  // the two logs are not). The margin is the native window's: a token with
  // z + T * g <= best - margin scores below best.
  const t = s.temperature,
    key = noiseKey(s.seed, s.position),
    tMaxNoise = f(t * GUMBEL_MAX);
  let bestIndex = row.argmax;
  let best = f(max + f(t * tokenNoise(key, bestIndex)));
  const marginOf = (b: number) => f((Math.abs(b) + tMaxNoise) * 2 ** -20);
  const floorOf = (b: number) => {
    const limit = f(f(b - tMaxNoise) - marginOf(b));
    return Number.isFinite(limit) ? Math.max(orderAtLeast(limit), tau) : tau;
  };
  let floor = floorOf(best);
  const consider = (i: number, o: number, bits: number) => {
    const score = f(values[o] + f(t * gumbel(uniform(bits))));
    if (score > best || (score === best && i < bestIndex)) {
      best = score;
      bestIndex = i;
      floor = floorOf(best);
    }
  };
  // The blocks whose largest bin is in [low, high) and at the floor.
  const scoreBlocks = (low: number, high: number) => {
    for (let b = 0; b < row.blocks; b++) {
      const blockMax = row.blockMax[b];
      if (blockMax < floor || blockMax < low || blockMax >= high) continue;
      const cells = cellsBelow((best - marginOf(best) - values[blockMax]) / t - 1e-4);
      const arithmetic = row.blockArithmetic[b] === 1;
      for (let i = b * BLOCK, end = Math.min(n, i + BLOCK); i < end; i++) {
        if (arithmetic ? arithmeticOrder(halves[i]) < arithmeticFloor(floor) : orderOf(row, i, order) < floor) continue;
        if (i === bestIndex) continue;
        const bits = hash((key + i) >>> 0);
        if (bits >>> 9 < cells) continue;
        consider(i, arithmetic ? order[halves[i]] : orderOf(row, i, order), bits);
      }
    }
  };
  // Below this bin a token needs a cell of at least cellsOf(split - 1) to win.
  const cellsOf = (o: number) => cellsBelow((best - marginOf(best) - values[o]) / t - 1e-4);
  // The blocks nearest the top first: their noise raises the best score.
  const nearTop = Math.max(floor, orderAtLeast(f(max - f(2 * t))));
  scoreBlocks(nearTop, 0x10000);
  // The split: every bin below it needs one of the top UNLIKELY_CELLS cells
  // (native/core/noise_argmax.h's plan). Its tokens are found from those
  // cells through the hash's inverse, not by hashing the blocks.
  let split = floor;
  if (Number.isFinite(best) && Number.isFinite(tMaxNoise) && cellsOf(floor) >= LOWEST_UNLIKELY_CELL) {
    let lo = floor,
      hi = row.top; // the largest bin whose cells are still that high
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (cellsOf(mid) >= LOWEST_UNLIKELY_CELL) lo = mid;
      else hi = mid - 1;
    }
    split = lo + 1;
  }
  scoreBlocks(split, nearTop);
  if (split > floor) {
    const first = cellsOf(split - 1) * 512; // higher than planned, or equal: the best only rises
    for (let h = first; h < 2 ** 32; h++) {
      const i = (hashInverse(h) - key) >>> 0;
      if (i >= n || i === bestIndex) continue;
      const o = orderOf(row, i, order);
      if (o >= floor) consider(i, o, h);
    }
  }
  return bestIndex;
}
