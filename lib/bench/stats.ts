// stats.ts: order statistics of timing samples.

export function quantile(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position),
    high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

export const median = (samples: readonly number[]) => quantile(samples, 0.5);

/** Microseconds per call of `run`, after `warmup` untimed calls. */
export function timeCalls(run: (i: number) => void, iterations: number, warmup: number): number[] {
  for (let i = 0; i < warmup; i++) run(i);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    run(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return samples;
}
