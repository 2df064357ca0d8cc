// gpu-sampler.ts: the sampling kernels on a device ('metal', or 'emulated':
// the same kernels on CPU fibers), opened once per process and kind.
import type { DeviceKind, NativeAddon, NativeDevice } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';
import { SamplingPacker } from '../native/native-sampler.js';
import { plainGreedy, type ResolvedSampling } from '../sampling-options.js';

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

const opened = new Map<DeviceKind, OpenedDevice>();

/** The device of `kind`, opened on first use, or why it cannot open here. */
export function openGpu(kind: DeviceKind): OpenedDevice {
  const known = opened.get(kind);
  if (known) return known;
  const addon = loadAddon();
  let result: OpenedDevice;
  if (!addon.ok) {
    result = { ok: false, reason: `it runs in the native addon, which is unavailable: ${addon.reason}` };
  } else {
    try {
      result = { ok: true, sampler: new GpuSampler(addon.addon, new addon.addon.Device(kind)) };
    } catch (error) {
      result = { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }
  opened.set(kind, result);
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
  return 'a Uint16Array of float16 bits (the GPU sampling kernel reads float16 logits; a Float32Array works only greedily, with temperature 0 and no tokenBias or repeatPenalty)';
}
