// native-sampler.ts: packs resolved options into the addon's argument
// layout, for the CPU sampler (sampleRow) and the devices alike.
import type { ResolvedSampling } from '../sampling-options.js';
import type { NativeAddon, SamplingArguments } from './contract.js';

const NO_MASK = new Uint32Array(0);

/** Reusable packing of one sampling step's arguments (the addon copies them during the call). */
export class SamplingPacker {
  readonly #index: NativeAddon['samplingSlots'];
  readonly #slots: Float64Array;

  constructor(addon: NativeAddon) {
    this.#index = addon.samplingSlots;
    this.#slots = new Float64Array(addon.samplingSlots.count);
  }

  pack(logits: Float32Array | Uint16Array, s: ResolvedSampling): SamplingArguments {
    const slot = this.#index;
    const v = this.#slots;
    v[slot.temperature] = s.temperature;
    v[slot.topK] = s.topK;
    v[slot.topP] = s.topP;
    v[slot.minP] = s.minP;
    v[slot.seed] = s.seed;
    v[slot.position] = s.position;
    v[slot.unitFilterTemperature] = s.unitFilterTemperature ? 1 : 0;
    v[slot.repeatPenalty] = s.repeatPenalty;
    v[slot.frequencyPenalty] = s.frequencyPenalty;
    v[slot.presencePenalty] = s.presencePenalty;
    v[slot.lastTokens] = s.window.length;
    return [logits, v, s.window, s.biasTokens, s.biasValues, s.mask ?? NO_MASK];
  }
}

/** The C++ CPU sampler. */
export class NativeSampler {
  readonly #addon: NativeAddon;
  readonly #packer: SamplingPacker;

  constructor(addon: NativeAddon) {
    this.#addon = addon;
    this.#packer = new SamplingPacker(addon);
  }

  /** The sampled token, or NO_TOKEN (0xFFFFFFFF) when every logit is -Infinity. */
  sample(logits: Float32Array | Uint16Array, s: ResolvedSampling): number {
    return this.#addon.sampleRow(...this.#packer.pack(logits, s));
  }
}
