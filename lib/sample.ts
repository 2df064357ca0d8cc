// sample.ts: the public one-step sampler.
import { requireNativeSampler, selectBackend } from './backends.js';
import { invalidParameterError, NoTokenError, rethrowWithCallerStack } from './errors.js';
import { NO_TOKEN, sampleJs } from './js/js-sampler.js';
import { resolveSampling, type SampleOptions } from './sampling-options.js';

function checkLogits(logits: unknown): asserts logits is Float32Array | Uint16Array {
  const expected = 'a Float32Array, or a Uint16Array of float16 bits, with at least one element';
  if (!(logits instanceof Float32Array || logits instanceof Uint16Array)) {
    throw invalidParameterError('logits', expected, logits, 'type');
  }
  if (logits.length === 0) throw invalidParameterError('logits', expected, logits, 'range');
}

/**
 * Samples the next token from one row of logits, exactly as
 * SAMPLING-SPEC.md defines it (docs/sampling.md explains it). Every backend
 * returns the same token for the same inputs.
 *
 * @throws TypeError or RangeError naming an invalid option;
 *         NoTokenError when every logit is -Infinity after bias and penalties;
 *         BackendUnavailableError when the backend asked for cannot run.
 */
export function sample(logits: Float32Array | Uint16Array, options?: SampleOptions): number {
  checkLogits(logits);
  const resolved = resolveSampling(options);
  let token: number;
  if (selectBackend(resolved.backend) === 'native') {
    try {
      token = requireNativeSampler().sample(logits, resolved);
    } catch (error) {
      rethrowWithCallerStack(error, sample);
    }
  } else {
    token = sampleJs(logits, resolved);
  }
  if (token === NO_TOKEN) throw new NoTokenError();
  return token;
}
