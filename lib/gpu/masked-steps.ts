// masked-steps.ts: constrained decoding on the GPU (MaskedSteps for any
// model whose forward pass is dispatch tables). Each token takes two
// submissions on the device's one queue: the forward pass of the pending
// token, then the pick (argmax or md_sample_f16) under the mask buffer.
// The mask is computed on the CPU after the forward pass is submitted,
// while the GPU runs it, and uploaded (V / 8 bytes) before the pick is
// submitted; the queue runs the two in order. Only the token id comes back.
import type { MaskedSteps } from '../generate/model.js';
import type { DispatchTable, GpuBuffer, GpuDevice } from './device.js';
import type { ChainSamplingOptions } from './sampling-command.js';

/** What a model's tables offer for masked steps. */
export interface MaskedStepTables {
  readonly device: GpuDevice;
  /** The sequence's token buffer: the pick writes token p + 1 there. */
  readonly tokens: GpuBuffer;
  /** One token's forward pass, its logits left for the pick. */
  readonly forward: DispatchTable;
  /** The pick under the mask buffer: the chain's argmax or sampling with `sampling`. The caller disposes it. */
  maskedPickTable(sampling: ChainSamplingOptions): DispatchTable;
  /** The buffer the pick reads its mask from (ceil(vocabSize / 32) words). */
  readonly maskBuffer: GpuBuffer;
  readonly noToken: number;
}

export class TableMaskedSteps implements MaskedSteps {
  readonly #source: MaskedStepTables;
  readonly #pick: DispatchTable;
  #pending: Promise<unknown> | undefined;

  constructor(source: MaskedStepTables, sampling: ChainSamplingOptions) {
    this.#source = source;
    this.#pick = source.maskedPickTable(sampling);
  }

  async step(token: number, position: number, maskFor: () => Promise<Uint32Array | null>): Promise<number | null> {
    const { device, tokens, forward, maskBuffer } = this.#source;
    tokens.write(position * 4, Uint32Array.of(token));
    const evaluated = device.runChain(forward, position, 1);
    this.#pending = evaluated;
    evaluated.catch(() => {}); // awaited below, unless the mask throws first
    const mask = await maskFor();
    if (mask === null) {
      await evaluated;
      return null;
    }
    maskBuffer.write(0, mask);
    const picked = device.runChain(this.#pick, position, 1);
    this.#pending = picked;
    await evaluated;
    await picked;
    const next = tokens.readUint32(position + 1, 1)[0];
    return next === this.#source.noToken ? -1 : next;
  }

  /** Waits for what is still on the GPU (after an abort), then frees the pick table. */
  async dispose(): Promise<void> {
    await this.#pending?.catch(() => {});
    this.#pick.dispose();
  }
}
