// step-sampler.ts: one sampling step of the step-by-step paths (the
// constrained path, and every path of a model without a chain): the
// options resolved once per call, with the position and the penalty window
// set per token, on the sequence's backend.
import { rowSampler, runsKernels, type BackendName } from '../backends.js';
import { invalidParameterError, NoTokenError } from '../errors.js';
import { kernelInputProblem } from '../gpu/gpu-sampler.js';
import { NO_TOKEN, samplingDistribution } from '../js/js-sampler.js';
import { toFloat16Array } from '../float16.js';
import type { RowSampler } from '../row-sampler.js';
import type { ResolvedSampling } from '../sampling-options.js';
import type { Logits } from './model.js';

export class StepSampler {
  readonly #backend: BackendName;
  #sampler: RowSampler | undefined; // made at the first token, so an unavailable backend fails there
  readonly #sampling: ResolvedSampling;
  readonly #asChained: boolean;

  /**
   * asChained: the logits are a chained model's float32 logits, which its
   * sampled tables round to float16 before the sampling kernel
   * (md_half_from_f32): the step-by-step paths round them alike, so they
   * draw what the chain draws. Otherwise float32 logits go to a GPU
   * sampler only greedily (kernelInputProblem says so).
   */
  constructor(backend: BackendName, sampling: ResolvedSampling, asChained = false) {
    this.#backend = backend;
    this.#sampling = sampling;
    this.#asChained = asChained;
  }

  get temperature(): number {
    return this.#sampling.temperature;
  }

  get seed(): number {
    return this.#sampling.seed;
  }

  /**
   * The token at `position`, with `sequence` (every token before it) as the
   * penalty history, among the tokens `mask` allows (all without one),
   * exactly as sample() would draw it.
   */
  async sample(row: Logits, position: number, sequence: Uint32Array, mask?: Uint32Array): Promise<number> {
    const s = this.#at(position, sequence, mask);
    const logits = this.#asSampled(row, s);
    const sampler = (this.#sampler ??= rowSampler(this.#backend));
    if (sampler.runsKernels) {
      const problem = kernelInputProblem(logits, s);
      if (problem) throw invalidParameterError("the model's logits", problem, logits, 'type');
    }
    const token = await sampler.sampleAsync(logits, s);
    if (token === NO_TOKEN) throw new NoTokenError();
    return token;
  }

  /** The distribution sample() draws from at `position` (speculative rejection sampling); NoTokenError when it is empty. */
  distribution(logits: Logits, position: number, sequence: Uint32Array, mask?: Uint32Array): Float64Array {
    const s = this.#at(position, sequence, mask);
    const p = samplingDistribution(this.#asSampled(logits, s), s);
    if (p === null) throw new NoTokenError();
    return p;
  }

  #asSampled(logits: Logits, s: ResolvedSampling): Logits {
    return runsKernels(this.#backend) && this.#asChained && logits instanceof Float32Array && kernelInputProblem(logits, s)
      ? toFloat16Array(logits)
      : logits;
  }

  #at(position: number, sequence: Uint32Array, mask: Uint32Array | undefined): ResolvedSampling {
    return { ...this.#sampling, position, window: sequence.subarray(Math.max(0, sequence.length - this.#sampling.lastTokens)), mask };
  }
}
