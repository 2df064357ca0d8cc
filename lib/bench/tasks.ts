// tasks.ts: a scenario is planned as a list of tasks, so the runner knows
// the total for its progress bar before anything is measured.
export interface BenchTask<T> {
  /** What the progress bar shows while the task runs. */
  label: string;
  run(): Promise<T>;
}

/** Warm-up calls before a cell's timed ones: enough to settle caches and JIT, few enough for slow backends. */
export const warmupCalls = (iterations: number) => Math.min(iterations, 5);
