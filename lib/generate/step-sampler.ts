// step-sampler.ts: one sampling step of the step-by-step paths (the
// constrained path, and every path of a model without a chain): the
// options resolved once per call, with the position and the penalty window
// set per token, on the sequence's backend.
import { requireGpuSampler, requireNativeSampler, type BackendName } from '../backends.js';
import { invalidParameterError, NoTokenError } from '../errors.js';
import { kernelInputProblem } from '../gpu/gpu-sampler.js';
import { NO_TOKEN, sampleJs } from '../js/js-sampler.js';
import type { ResolvedSampling } from '../sampling-options.js';
import type { Logits } from './model.js';

export class StepSampler {
  readonly #backend: BackendName;
  readonly #sampling: ResolvedSampling;

  constructor(backend: BackendName, sampling: ResolvedSampling) {
    this.#backend = backend;
    this.#sampling = sampling;
  }

  /**
   * The token at `position`, with `sequence` (every token before it) as the
   * penalty history, exactly as sample() would draw it.
   */
  async sample(logits: Logits, position: number, sequence: Uint32Array): Promise<number> {
    const s: ResolvedSampling = {
      ...this.#sampling,
      position,
      window: sequence.subarray(Math.max(0, sequence.length - this.#sampling.lastTokens)),
    };
    let token: number;
    switch (this.#backend) {
      case 'js':
        token = sampleJs(logits, s);
        break;
      case 'native':
        token = requireNativeSampler().sample(logits, s);
        break;
      default: {
        const problem = kernelInputProblem(logits, s);
        if (problem) throw invalidParameterError('the model\'s logits', problem, logits, 'type');
        token = await requireGpuSampler(this.#backend).sampleAsync(logits, s);
      }
    }
    if (token === NO_TOKEN) throw new NoTokenError();
    return token;
  }
}

/** `logits` with every token the bitmask does not allow set to -Infinity (a copy). */
export function applyMask(logits: Logits, mask: Uint32Array): Logits {
  const masked = logits.slice();
  const minusInfinity = masked instanceof Uint16Array ? 0xfc00 : -Infinity;
  for (let t = 0; t < masked.length; t++) {
    if ((mask[t >>> 5] & (1 << (t & 31))) === 0) masked[t] = minusInfinity;
  }
  return masked;
}
