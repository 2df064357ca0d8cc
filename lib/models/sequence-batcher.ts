// sequence-batcher.ts: the one-token steps of a model's CPU sequences,
// evaluated together. Decoding one token is bound by reading the weights,
// so the steps of several sequences (several Sessions, ChatSessions,
// generate() calls, the server's users) cost little more in one forward
// pass (Transformer::evaluateSequences) than one alone; each sequence gets
// the bits it gets alone.
//
// Continuous batching: a step waits for the next pass; the sequences of the
// last pass are expected back (each samples its token, then asks for the
// next step), so a pass starts when all of them have asked, or after
// WAIT_MS when one has not (it finished, or is busy elsewhere); a sequence
// that joins rides the next pass. A step that cannot run (a position past
// the sequence's end, a token outside the vocabulary) fails alone: the
// pass is run again without it.
import type { NativeTransformer, NativeTransformerSequence } from '../native/contract.js';

/** How long a pass waits for a sequence of the last pass to ask for its next step. */
export const WAIT_MS = 2;

/** A fused-head pick's packed options (SamplingPacker): slots, bias tokens, bias values. */
export type PackedPick = [Float64Array, Uint32Array, Float32Array];

interface Step {
  native: NativeTransformerSequence;
  token: number;
  position: number;
  pick: PackedPick | null;
  resolve: (token: number) => void;
  reject: (error: unknown) => void;
}

export class SequenceBatcher {
  readonly #transformer: NativeTransformer;
  #pending: Step[] = [];
  #expected = new Set<NativeTransformerSequence>();
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  /** Passes run and the steps they held: what batching did. */
  readonly stats = { passes: 0, steps: 0, largest: 0 };

  constructor(transformer: NativeTransformer) {
    this.#transformer = transformer;
  }

  /**
   * One token of `native` at `position`: with `pick`, resolves with the
   * token the fused head picks (the logits left alone); without, the logits
   * are in native.logits when it resolves (and the value is meaningless).
   */
  step(native: NativeTransformerSequence, token: number, position: number, pick: PackedPick | null): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.#pending.push({ native, token, position, pick, resolve, reject });
      this.#schedule();
    });
  }

  /** A sequence that ends: a pass no longer waits for it. */
  forget(native: NativeTransformerSequence): void {
    this.#expected.delete(native);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#running || this.#pending.length === 0) return;
    const asked = new Set(this.#pending.map((s) => s.native));
    const everyone = [...this.#expected].every((n) => asked.has(n));
    if (everyone) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      // The rest of this turn's steps join (their promises settle together).
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        void this.#pass();
      });
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        if (this.#immediate === undefined) void this.#pass();
      }, WAIT_MS);
    }
  }

  async #pass(): Promise<void> {
    if (this.#running || this.#pending.length === 0) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // One step per sequence in a pass: a sequence's next step waits for the next pass.
    const batch: Step[] = [];
    const rest: Step[] = [];
    const taken = new Set<NativeTransformerSequence>();
    for (const s of this.#pending) {
      if (taken.has(s.native)) rest.push(s);
      else {
        taken.add(s.native);
        batch.push(s);
      }
    }
    this.#pending = rest;
    this.#running = true;
    this.#expected = taken;
    this.stats.passes++;
    this.stats.steps += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    try {
      await this.#run(batch);
    } finally {
      this.#running = false;
      this.#schedule();
    }
  }

  async #run(batch: Step[]): Promise<void> {
    if (batch.length === 1) return this.#alone(batch[0]!);
    let picked: Uint32Array;
    try {
      picked = await this.#transformer.evaluateSequences(
        batch.map((s) => s.native),
        Uint32Array.from(batch, (s) => s.token),
        Uint32Array.from(batch, (s) => s.position),
        batch.map((s) => s.pick),
      );
    } catch {
      // One step did not fit: each alone, so the others run and that one gets its own error.
      await Promise.all(batch.map((s) => this.#alone(s)));
      return;
    }
    batch.forEach((s, i) => s.resolve(picked[i]!));
  }

  async #alone(s: Step): Promise<void> {
    try {
      const one = Uint32Array.of(s.token);
      if (s.pick) s.resolve(await s.native.evaluateAndPick(one, s.position, ...s.pick));
      else {
        await s.native.evaluate(one, s.position);
        s.resolve(0);
      }
    } catch (error) {
      s.reject(error);
    }
  }
}
