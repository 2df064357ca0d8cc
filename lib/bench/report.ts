// report.ts: what a benchmark run produces: the shape of `--json` (its
// JSON Schema is bench/report.schema.json) and what the table, SVG and HTML
// renderers read.
import type { BackendInfo, BackendName } from '../backends.js';
import type { MachineInfo } from './machine.js';

export const REPORT_SCHEMA_VERSION = 1;

export type ScenarioName = 'sampler' | 'decode';

/** What the sampler scenario times: a backend's sample(), or llama.cpp's sampler chain on the same rows. */
export type SamplerEngine = BackendName | 'llama.cpp';

/** One cell of the sampler scenario: sample() on one backend (or llama.cpp's chain), vocabulary size and configuration. */
export interface SamplerResult {
  backend: SamplerEngine;
  vocab: number;
  config: string;
  iterations: number;
  medianUs: number;
  p90Us: number;
  /** js's median over this backend's, both from this run; null when js was not measured. */
  speedupOverJs: number | null;
}

/** One row of the decode scenario: the bigram model through generate() on one backend. */
export interface DecodeResult {
  backend: BackendName;
  mode: 'greedy' | 'sampled';
  /** Tokens per second with chunkSize tokens per GPU submission; null on the CPU backends, which have no chain. */
  chainedTokensPerSecond: number | null;
  /** Tokens per second with one token per submission (on the CPU: one forward and one sample per token). */
  onePerSubmissionTokensPerSecond: number;
  chainedOverOne: number | null;
}

/**
 * One row of the decode scenario's speculation part: the same generate()
 * with and without n-gram speculation (exact: the same tokens), on a
 * repetitive text (a bigram counted from a short repeated corpus) or free
 * text (the seeded random bigram).
 */
export interface SpeculativeDecodeResult {
  backend: BackendName;
  mode: 'greedy' | 'sampled';
  text: 'repetitive' | 'free';
  /** Without speculation, on the backend's default path (chained on a GPU). */
  plainTokensPerSecond: number;
  speculativeTokensPerSecond: number;
  speculativeOverPlain: number;
  forwardPassesPerToken: number;
  acceptanceRate: number;
}

export interface BenchSettings {
  scenarios: ScenarioName[];
  backends: BackendName[];
  vocabs: number[];
  shape: 'lm' | 'flat';
  /** Timed repetitions per cell as given, or null for each backend's default. */
  iterations: number | null;
  decode: { vocab: number; dim: number; tokens: number; chunkSize: number };
  seed: number;
  /** The sampler scenario's llama.cpp column: 'auto' when its library is found, 'llama.cpp' (an error without it), 'none'. */
  compare: 'auto' | 'llama.cpp' | 'none';
}

export interface BenchReport {
  schemaVersion: typeof REPORT_SCHEMA_VERSION;
  machine: MachineInfo;
  settings: BenchSettings;
  /** Every backend, measured or not, with why it is (un)available. */
  backends: BackendInfo[];
  sampler: SamplerResult[];
  /** The llama.cpp sampler the sampler scenario compared (its library), or why it did not. */
  llamaCppSampler: { library: string | null; reason: string | null };
  decode: DecodeResult[];
  /** With the decode scenario: speculative decoding against without. */
  speculative?: SpeculativeDecodeResult[];
  startedAt: string;
  durationMs: number;
}
