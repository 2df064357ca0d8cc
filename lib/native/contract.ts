// contract.ts: the typed shape of the compiled addon's exports
// (native/addon/addon.cpp). The loader checks abiVersion against this file.

export const ADDON_ABI_VERSION = 1;

export type SamplingSlotName =
  | 'temperature' | 'topK' | 'topP' | 'minP' | 'seed' | 'position' | 'unitFilterTemperature'
  | 'repeatPenalty' | 'frequencyPenalty' | 'presencePenalty' | 'lastTokens';

export interface NativeAddon {
  readonly abiVersion: number;
  /** Where each scalar option goes in sampleRow's `slots` array; `count` is its length. */
  readonly samplingSlots: Readonly<Record<SamplingSlotName | 'count', number>>;
  /** What sampleRow returns when every logit is -Infinity. */
  readonly noToken: number;
  /** One sampling step on the CPU (native/core/cpu_sampler.h). */
  sampleRow(
    logits: Float32Array | Uint16Array,
    slots: Float64Array,
    history: Uint32Array,
    biasTokens: Uint32Array,
    biasValues: Float32Array,
  ): number;
}
