// sampler-scenario.ts: microseconds per sample() call, per backend,
// vocabulary size and sampling configuration, on seeded float16 rows; each
// backend's speed-up over js comes from the same run.
import type { BackendName } from '../backends.js';
import { numberFromFloat16 } from '../float16.js';
import { sample } from '../sample.js';
import { timeLlamaSampler, type LlamaSamplerSource } from './llama-cpp-sampler.js';
import { float16Row } from './logit-rows.js';
import type { BenchSettings, SamplerResult } from './report.js';
import { SAMPLER_CONFIGS } from './sampler-configs.js';
import { median, quantile, timeCalls } from './stats.js';
import { warmupCalls, type BenchTask } from './tasks.js';

/** Timed calls per cell when --iterations is not given: the slow backends get fewer. */
export function defaultSamplerIterations(backend: BackendName): number {
  return backend === 'js' || backend === 'emulated' ? 20 : 200;
}

const ROWS_PER_CELL = 4; // different rows, so a cell does not time one row's cache state

/**
 * Every cell's tasks: each backend, and llama.cpp's sampler chain when
 * `llamaCpp` has a library (the same rows as float32, the same iterations
 * as native).
 */
export function planSampler(settings: BenchSettings, llamaCpp?: LlamaSamplerSource): BenchTask<SamplerResult>[] {
  const tasks: BenchTask<SamplerResult>[] = [];
  for (const vocab of settings.vocabs) {
    let rows: Uint16Array[] | undefined; // made on first use, shared by the cell's backends and configs
    for (const [config, options] of Object.entries(SAMPLER_CONFIGS)) {
      const library = llamaCpp?.library;
      if (library) {
        tasks.push({
          label: `sampler V=${vocab} ${config} on llama.cpp`,
          run: async () => {
            rows ??= Array.from({ length: ROWS_PER_CELL }, (_, i) => float16Row(vocab, settings.shape, settings.seed + i));
            const floats = rows.map((row) => Float32Array.from(row, numberFromFloat16));
            const iterations = settings.iterations ?? defaultSamplerIterations('native');
            const samples = await timeLlamaSampler(library, floats, options, settings.seed, iterations, warmupCalls(iterations));
            return { backend: 'llama.cpp', vocab, config, iterations, medianUs: median(samples), p90Us: quantile(samples, 0.9), speedupOverJs: null };
          },
        });
      }
      for (const backend of settings.backends) {
        tasks.push({
          label: `sampler V=${vocab} ${config} on ${backend}`,
          run: async () => {
            rows ??= Array.from({ length: ROWS_PER_CELL }, (_, i) => float16Row(vocab, settings.shape, settings.seed + i));
            const cellRows = rows;
            const iterations = settings.iterations ?? defaultSamplerIterations(backend);
            // V8 optimises the js sampler's loops only after tens of calls; a
            // decode loop makes thousands, so its steady state is what is timed.
            const warmup = backend === 'js' ? Math.max(warmupCalls(iterations), 50) : warmupCalls(iterations);
            const samples = timeCalls(
              (i) => sample(cellRows[i % cellRows.length], { ...options, backend, seed: settings.seed, position: i }),
              iterations,
              warmup,
            );
            return { backend, vocab, config, iterations, medianUs: median(samples), p90Us: quantile(samples, 0.9), speedupOverJs: null };
          },
        });
      }
    }
  }
  return tasks;
}

/** Fills each result's speed-up over js from the js result of the same cell. */
export function withSpeedups(results: SamplerResult[]): SamplerResult[] {
  return results.map((r) => {
    const js = results.find((j) => j.backend === 'js' && j.vocab === r.vocab && j.config === r.config);
    return { ...r, speedupOverJs: js ? js.medianUs / r.medianUs : null };
  });
}
