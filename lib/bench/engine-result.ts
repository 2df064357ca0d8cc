// engine-result.ts: what `bench model` reports of one engine, and the
// prompt and timings both engines are measured by (model-bench.ts runs
// ours; llama-cpp-model-run.ts runs llama.cpp's in a process of its own).
import { median } from './stats.js';

export interface EngineResult {
  engine: string;
  /** null when the engine did not run; `note` says why. */
  prefillTokensPerSecond: number | null;
  decodeTokensPerSecond: number | null;
  timeToFirstTokenMs: number | null;
  note: string;
  /** Resident memory the engine added, loaded with its prompt evaluated and tokens generated; null when it did not run. */
  residentBytes: number | null;
  /** The model's load, from its file to ready to evaluate (ours: loadModel, with the repacking; llama.cpp: its loadModel), once; null when it did not run. */
  loadMs: number | null;
}

/** A prompt of valid, varied token ids (the same for both engines). */
export function promptOf(count: number, vocab: number): number[] {
  return Array.from({ length: count }, (_, i) => (i * 7919 + 13) % Math.max(1, vocab - 8));
}

export interface Timings {
  prefill: number[];
  decode: number[];
  ttft: number[];
}

export function summary(engine: string, t: Timings, prompt: number, note: string, residentBytes: number, loadMs: number): EngineResult {
  return {
    engine,
    residentBytes,
    loadMs,
    prefillTokensPerSecond: prompt / (median(t.prefill) / 1000),
    decodeTokensPerSecond: 1000 / median(t.decode),
    timeToFirstTokenMs: median(t.ttft),
    note,
  };
}
