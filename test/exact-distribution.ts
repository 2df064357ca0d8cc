// exact-distribution.ts: the distribution docs/sampling.md says a sampled
// token follows, computed in double precision from the definitions, and
// the chi-square test against it.
import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';

export interface FilterOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  unit?: boolean;
}

/** P(token = i) for logits z (finite values, after bias and penalties). */
export function exactDistribution(z: number[], o: FilterOptions): number[] {
  const n = z.length;
  const max = Math.max(...z);
  const tf = o.unit ? 1 : o.temperature;
  const sorted = [...z].sort((a, b) => b - a);
  let tau = -Infinity;
  const tauK = o.topK > 0 && o.topK < n ? sorted[o.topK - 1] : -Infinity;
  tau = tauK;
  if (o.topP < 1) {
    const inK = sorted.filter((v) => v >= tauK);
    const w = (v: number) => Math.exp((v - max) / tf);
    const total = inK.reduce((s, v) => s + w(v), 0);
    const levels = [...new Set(inK)];
    let cumulative = 0;
    for (const level of levels) {
      cumulative += inK.filter((v) => v === level).length * w(level);
      if (cumulative >= o.topP * total) {
        tau = Math.max(tau, level);
        break;
      }
    }
  }
  if (o.minP > 0) tau = Math.max(tau, max + tf * Math.log(o.minP));
  const weights = z.map((v) => (v >= tau ? Math.exp((v - max) / o.temperature) : 0));
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / sum);
}

/** Chi-square p-value of observed counts against probabilities (cells with p > 0). */
export function chiSquarePValue(counts: number[], probabilities: number[]): { p: number; statistic: number } {
  const samples = counts.reduce((a, b) => a + b, 0);
  let statistic = 0,
    cells = 0;
  probabilities.forEach((p, i) => {
    if (p === 0) return;
    const expected = p * samples;
    statistic += (counts[i] - expected) ** 2 / expected;
    cells++;
  });
  return { p: 1 - chisquareCdf(statistic, cells - 1), statistic };
}
