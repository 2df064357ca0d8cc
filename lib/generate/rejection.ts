// rejection.ts: speculative sampling's acceptance test (Leviathan et al.
// 2023; Chen et al. 2023), the `verification: 'rejection'` option. A draft
// token x drawn from the draft's distribution q is kept with probability
// min(1, p(x) / q(x)) under the target's distribution p; a rejected one is
// replaced by a draw from the residual max(0, p - q), normalised. Whatever
// q is, every token that comes out follows p: the output has the
// distribution of non-speculative sampling, but not its exact tokens (the
// draws use other random numbers). An n-gram draft is a point mass: q(x) = 1.
import { hash, noiseKey, uniform } from '../js/noise.js';

/** What a uniform below is for: the test, a residual draw, a draft model's own draw. */
export const UNIFORM_STREAMS = { accept: 1, residual: 2, draft: 3 } as const;
export type UniformStream = keyof typeof UNIFORM_STREAMS;

/**
 * A uniform in (0, 1) for (seed, position, stream): reproducible with the
 * seed, and independent of the sampler's Gumbel noise at that position
 * (hashed once more, with the stream).
 */
export function speculativeUniform(seed: number, position: number, stream: UniformStream): number {
  return uniform(hash((hash((noiseKey(seed, position) ^ 0x5bd1e995) >>> 0) + UNIFORM_STREAMS[stream]) >>> 0));
}

/**
 * One row of rejection verification: `p` the target's distribution,
 * `token` the draft's, `q` the distribution it was drawn from (undefined:
 * it was certain), `u` and `v` uniforms for the test and the residual draw.
 */
export function verifyByRejection(
  p: Float64Array,
  token: number,
  q: Float64Array | undefined,
  u: number,
  v: number,
): { token: number; kept: boolean } {
  if (keepsDraft(p[token], q === undefined ? 1 : q[token], u)) return { token, kept: true };
  return { token: residualDraw(p, token, q, v), kept: false };
}

/** The test: keep a token of target probability `p` drawn with probability `q` when u < min(1, p / q). */
export function keepsDraft(p: number, q: number, u: number): boolean {
  return q > 0 && u < Math.min(1, p / q);
}

/** The replacement for a rejected `token`: a draw with `v` from max(0, p - q), normalised (q undefined: the token was certain). */
export function residualDraw(p: Float64Array, token: number, q: Float64Array | undefined, v: number): number {
  const residual = new Float64Array(p.length);
  for (let i = 0; i < p.length; i++) residual[i] = Math.max(0, p[i] - (q === undefined ? (i === token ? 1 : 0) : q[i]));
  // An all-zero residual would need p(x) >= q(x) for a rejected x: only rounding gets there.
  const replacement = drawFrom(residual, v);
  return replacement >= 0 ? replacement : drawFrom(p, v);
}

/** Inverse CDF: the token at cumulative weight u of the total (weights need not sum to 1; the last positive one catches rounding); -1 when none is positive. */
export function drawFrom(weights: Float64Array, u: number): number {
  let total = 0;
  for (const w of weights) total += w;
  const target = u * total;
  let cumulative = 0,
    last = -1;
  for (let i = 0; i < weights.length; i++) {
    if (weights[i] <= 0) continue;
    cumulative += weights[i];
    last = i;
    if (cumulative > target) return i;
  }
  return last;
}
