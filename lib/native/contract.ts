// contract.ts: the typed shape of the compiled addon's exports
// (native/addon/addon.cpp). The loader checks abiVersion against this file.

export const ADDON_ABI_VERSION = 2;

export type DeviceKind = 'metal' | 'emulated';

export type SamplingSlotName =
  | 'temperature' | 'topK' | 'topP' | 'minP' | 'seed' | 'position' | 'unitFilterTemperature'
  | 'repeatPenalty' | 'frequencyPenalty' | 'presencePenalty' | 'lastTokens';

/** The arguments of one sampling step, as sampleRow and the devices take them. */
export type SamplingArguments = [
  logits: Float32Array | Uint16Array,
  slots: Float64Array,
  history: Uint32Array,
  biasTokens: Uint32Array,
  biasValues: Float32Array,
];

/** A GPU device with the sampling kernels (native/addon/device_binding.h). */
export interface NativeDevice {
  /** e.g. "Apple M2 Pro" or "emulated (CPU fibers, forward order)". */
  readonly name: string;
  /** Blocks until the kernels ran; the token, or noToken. */
  sample(...args: SamplingArguments): number;
  /** The same off the event loop. */
  sampleAsync(...args: SamplingArguments): Promise<number>;
  /** Releases the device; work already queued finishes. */
  dispose(): void;
}

export interface NativeAddon {
  readonly abiVersion: number;
  /** Where each scalar option goes in sampleRow's `slots` array; `count` is its length. */
  readonly samplingSlots: Readonly<Record<SamplingSlotName | 'count', number>>;
  /** What sampleRow returns when every logit is -Infinity. */
  readonly noToken: number;
  /** One sampling step on the CPU (native/core/cpu_sampler.h). */
  sampleRow(...args: SamplingArguments): number;
  /** Opens a device; throws an Error saying why when it cannot (e.g. no Metal on Linux). */
  readonly Device: new (kind: DeviceKind) => NativeDevice;
}
