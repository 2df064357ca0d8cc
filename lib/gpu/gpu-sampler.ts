// gpu-sampler.ts: the sampling kernels on a device ('metal', or 'emulated':
// the same kernels on CPU fibers), on the process's shared device of that
// kind.
import type { DeviceKind, NativeAddon, NativeDevice } from '../native/contract.js';
import { SamplingPacker } from '../native/native-sampler.js';
import { plainGreedy, type ResolvedSampling } from '../sampling-options.js';
import { openShared } from './shared-devices.js';

export class GpuSampler {
  readonly #device: NativeDevice;
  readonly #packer: SamplingPacker;

  constructor(addon: NativeAddon, device: NativeDevice) {
    this.#device = device;
    this.#packer = new SamplingPacker(addon);
  }

  get deviceName(): string {
    return this.#device.name;
  }

  /** Waits for the kernels; the token or NO_TOKEN. */
  sample(logits: Float32Array | Uint16Array, s: ResolvedSampling): number {
    return this.#device.sample(...this.#packer.pack(logits, s));
  }

  /** The same, resolved off the event loop. */
  sampleAsync(logits: Float32Array | Uint16Array, s: ResolvedSampling): Promise<number> {
    return this.#device.sampleAsync(...this.#packer.pack(logits, s));
  }
}

export type OpenedDevice = { ok: true; sampler: GpuSampler } | { ok: false; reason: string };

const samplers = new Map<DeviceKind, OpenedDevice>();

/** The sampling kernels on the process's device of `kind` (shared-devices.ts), or why it cannot open here. */
export function openGpu(kind: DeviceKind): OpenedDevice {
  const known = samplers.get(kind);
  if (known) return known;
  const shared = openShared(kind);
  const result: OpenedDevice = shared.ok ? { ok: true, sampler: new GpuSampler(shared.addon, shared.device) } : shared;
  samplers.set(kind, result);
  return result;
}

/**
 * Why the kernels cannot take these inputs, or undefined when they can:
 * the sampling kernel reads float16 rows; float32 rows have only the argmax
 * kernel (native/core/kernel_sampler.cpp checks the same).
 */
export function kernelInputProblem(logits: Float32Array | Uint16Array, s: ResolvedSampling): string | undefined {
  if (logits instanceof Uint16Array) return undefined;
  if (plainGreedy(s)) return undefined;
  return 'a Uint16Array of float16 bits (the GPU sampling kernel reads float16 logits; a Float32Array works only greedily, with temperature 0 and no logitBias or repeatPenalty)';
}
