// sample.ts: the public one-step sampler, synchronous and asynchronous.
import { rowSampler, runsKernels, selectBackend, type BackendName } from './backends.js';
import { callerStack, invalidParameterError, NoTokenError, rethrowWithCallerStack, rethrowWithStack, type AnyFunction } from './errors.js';
import { kernelInputProblem } from './gpu/gpu-sampler.js';
import { NO_TOKEN } from './js/js-sampler.js';
import { resolveSampling, type ResolvedSampling, type SampleOptions } from './sampling-options.js';

type Logits = Float32Array | Uint16Array;

function checkLogits(logits: unknown): asserts logits is Logits {
  const expected = 'a Float32Array, or a Uint16Array of float16 bits, with at least one element';
  if (!(logits instanceof Float32Array || logits instanceof Uint16Array)) {
    throw invalidParameterError('logits', expected, logits, 'type');
  }
  if (logits.length === 0) throw invalidParameterError('logits', expected, logits, 'range');
}

/**
 * The row the samplers read. They read it more than once (a scan, then the
 * draw), so a row in a SharedArrayBuffer, which another thread may write
 * meanwhile, is copied first: the token then comes from one consistent row.
 */
function stableRow(logits: Logits): Logits {
  return typeof SharedArrayBuffer !== 'undefined' && logits.buffer instanceof SharedArrayBuffer ? logits.slice() : logits;
}

/** Validates everything and picks the backend, before any work is done. */
function prepare(logits: unknown, options: SampleOptions | undefined): { backend: BackendName; resolved: ResolvedSampling; row: Logits } {
  checkLogits(logits);
  const row = stableRow(logits);
  const resolved = resolveSampling(options);
  const words = Math.ceil(logits.length / 32);
  if (resolved.mask && resolved.mask.length !== words) {
    throw invalidParameterError(
      'mask',
      `a Uint32Array bitmask of ceil(logits.length / 32) = ${words} words`,
      `${resolved.mask.length} words`,
      'range',
    );
  }
  const backend = selectBackend(resolved.backend, { logits, sampling: resolved });
  if (runsKernels(backend)) {
    const problem = kernelInputProblem(logits, resolved);
    if (problem) throw invalidParameterError('logits', problem, logits, 'type');
  }
  return { backend, resolved, row };
}

function checkedToken(token: number): number {
  if (token === NO_TOKEN) throw new NoTokenError();
  return token;
}

/**
 * Samples the next token from one row of logits, exactly as
 * docs/sampling.md defines it, with a worked example per step. Every backend
 * returns the same token for the same inputs. On 'metal' and 'emulated'
 * this waits for the kernels; sampleAsync() does not block the event loop.
 *
 * @throws TypeError or RangeError naming an invalid option;
 *         NoTokenError when every logit is -Infinity after bias and penalties;
 *         BackendUnavailableError when the backend asked for cannot run.
 */
export function sample(logits: Logits, options?: SampleOptions): number {
  const { backend, resolved, row } = prepare(logits, options);
  return runBlocking(backend, row, resolved, sample);
}

function runBlocking(backend: BackendName, logits: Logits, resolved: ResolvedSampling, caller: AnyFunction): number {
  let token: number;
  try {
    token = rowSampler(backend).sample(logits, resolved);
  } catch (error) {
    rethrowWithCallerStack(error, caller);
  }
  return checkedToken(token);
}

/**
 * sample(), resolved as a Promise. On 'metal' and 'emulated' the kernels
 * run while the event loop goes on; the CPU backends compute at once.
 * Rejects with the same errors sample() throws.
 */
export async function sampleAsync(logits: Logits, options?: SampleOptions): Promise<number> {
  const stack = callerStack(sampleAsync);
  const { backend, resolved, row } = prepare(logits, options);
  let token: number;
  try {
    token = await rowSampler(backend).sampleAsync(row, resolved);
  } catch (error) {
    rethrowWithStack(error, stack);
  }
  return checkedToken(token);
}
