// row-sampler.ts: what every backend does with one row of logits, as one
// interface: the decode loop and sample() ask the backend's object instead
// of comparing backend names. The implementations are the TypeScript
// sampler, the native addon's and the kernels on a GPU device
// (backends.ts makes them).
import type { ResolvedSampling } from './sampling-options.js';

/** Where a model and its sampler run. */
export type BackendName = 'metal' | 'emulated' | 'native' | 'js';

export interface RowSampler {
  readonly backend: BackendName;
  /**
   * Whether it runs the Metal kernels, which read float16 rows: a float32
   * row goes to them only plain greedy (kernelInputProblem says why not).
   */
  readonly runsKernels: boolean;
  /** The token, or NO_TOKEN (0xFFFFFFFF) when every logit is -Infinity; waits for a GPU. */
  sample(logits: Float32Array | Uint16Array, s: ResolvedSampling): number;
  /** sample() without waiting for a GPU: its completion settles the promise. The CPU samplers compute at once. */
  sampleAsync(logits: Float32Array | Uint16Array, s: ResolvedSampling): Promise<number>;
}
