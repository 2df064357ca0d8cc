// native-sampler.ts: packs resolved options for the addon's sampleRow.
import type { ResolvedSampling } from '../sampling-options.js';
import type { NativeAddon } from './contract.js';

export class NativeSampler {
  readonly #addon: NativeAddon;
  readonly #slots: Float64Array;

  constructor(addon: NativeAddon) {
    this.#addon = addon;
    this.#slots = new Float64Array(addon.samplingSlots.count);
  }

  /** The sampled token, or NO_TOKEN (0xFFFFFFFF) when every logit is -Infinity. */
  sample(logits: Float32Array | Uint16Array, s: ResolvedSampling): number {
    const slot = this.#addon.samplingSlots;
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
    return this.#addon.sampleRow(logits, v, s.window, s.biasTokens, s.biasValues);
  }
}
