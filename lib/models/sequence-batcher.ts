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
//
// Whatever else a sequence runs (a prompt, the rows of a verification)
// takes a turn between passes: a prompt runs in chunks (loadModel's
// prefillChunk, 32 tokens by default) while other sequences decode, a
// pass of their steps between two chunks, so a newcomer's prompt does not
// stop the others' streams (chunked prefill); alone, it runs whole. A chunk gives the positions it
// holds the bits the whole prompt gives them (the batch kernels compute
// each row alike; AMX tiles within their tolerance).
import type { NativeTransformer, NativeTransformerSequence } from '../native/contract.js';

/** How long a pass waits for a sequence of the last pass to ask for its next step. */
export const WAIT_MS = 2;

/** Tokens of a prompt evaluated between two passes of the other sequences' steps, by default (loadModel's prefillChunk). */
export const PREFILL_CHUNK = 32;

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

interface Turn {
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SequenceBatcher {
  readonly #transformer: NativeTransformer;
  #pending: Step[] = [];
  #turns: Turn[] = [];
  // A pass ran since the last turn: the next turn may go first (passes and turns alternate).
  #passedSinceTurn = true;
  #expected = new Set<NativeTransformerSequence>();
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  /** Passes run and the steps they held, and turns taken between them (prompt chunks among them): what batching did. */
  readonly stats = { passes: 0, steps: 0, largest: 0, turns: 0 };

  constructor(
    transformer: NativeTransformer,
    readonly prefillChunk = PREFILL_CHUNK,
  ) {
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

  /**
   * `task` (a forward pass of `native`'s own) between two passes: after
   * the pass in flight, before the next when a pass ran since the last turn.
   */
  turn<T>(native: NativeTransformerSequence, task: () => Promise<T>): Promise<T> {
    this.#expected.delete(native); // busy with its turn: the next pass does not wait for it
    return new Promise<T>((resolve, reject) => {
      this.#turns.push({ run: task, resolve: resolve as (value: unknown) => void, reject });
      this.#schedule();
    });
  }

  /** Whether sequences other than `native` are decoding: a prompt of `native` then runs in chunks. */
  othersDecoding(native: NativeTransformerSequence): boolean {
    return this.#pending.some((s) => s.native !== native) || [...this.#expected].some((n) => n !== native);
  }

  /**
   * A prompt of `native` from `position`: every chunk but the last through
   * `evaluate`, the last through `last`, each a turn; in chunks of
   * prefillChunk tokens while other sequences decode, whole when none does.
   */
  async prefill<T>(
    native: NativeTransformerSequence,
    tokens: Uint32Array,
    position: number,
    evaluate: (chunk: Uint32Array, position: number) => Promise<unknown>,
    last: (chunk: Uint32Array, position: number) => Promise<T>,
  ): Promise<T> {
    let at = 0;
    const size = this.prefillChunk;
    while (tokens.length - at > size && this.othersDecoding(native)) {
      const chunk = tokens.subarray(at, at + size);
      await this.turn(native, () => evaluate(chunk, position + at));
      at += size;
    }
    const rest = tokens.subarray(at);
    return this.turn(native, () => last(rest, position + at));
  }

  /** A sequence that ends: a pass no longer waits for it. */
  forget(native: NativeTransformerSequence): void {
    this.#expected.delete(native);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#running) return;
    if (this.#turns.length > 0 && (this.#pending.length === 0 || this.#passedSinceTurn)) {
      void this.#turn();
      return;
    }
    if (this.#pending.length === 0) return;
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
    this.#passedSinceTurn = true;
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

  async #turn(): Promise<void> {
    const turn = this.#turns.shift()!;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = true;
    this.#passedSinceTurn = false;
    this.stats.turns++;
    try {
      turn.resolve(await turn.run());
    } catch (error) {
      turn.reject(error);
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
