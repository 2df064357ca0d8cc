// chain.ts: chained decoding from Node. A table is replayed `chunkSize`
// tokens per command buffer; with double buffering, chunk k + 1 is queued
// before the tokens of chunk k are handed out, so the GPU works while the
// caller streams. Token buffers hold the whole sequence, so chunk k + 1
// reads the token chunk k wrote without a CPU round trip.
import { NoTokenError, invalidParameterError } from '../errors.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { DispatchTable, GpuBuffer } from './device.js';

export interface ChainOptions {
  /** Tokens per command buffer. Default 16. */
  chunkSize?: number;
  /** Queue chunk k + 1 before handing out chunk k. Default true; false waits for each chunk first. */
  doubleBuffered?: boolean;
}

import type { ChainChunk } from '../generate/model.js';

export type { ChainChunk };

const CHAIN_OPTION_NAMES = new Set(['chunkSize', 'doubleBuffered']);

export function resolveChainOptions(options: ChainOptions | undefined): Required<ChainOptions> {
  const o = (options ?? {}) as Record<string, unknown>;
  if (!isPlainObject(o)) throw invalidParameterError('options', 'a plain object', options, 'type');
  for (const key of Object.keys(o)) {
    if (!CHAIN_OPTION_NAMES.has(key)) throw new TypeError(`Unknown option ${key}; the options are: ${[...CHAIN_OPTION_NAMES].join(', ')}`);
  }
  const chunkSize = o.chunkSize ?? 16;
  if (!isInteger(chunkSize)) throw invalidParameterError('chunkSize', 'an integer from 1 to 65536', chunkSize, 'type');
  if (chunkSize < 1 || chunkSize > 65536) throw invalidParameterError('chunkSize', 'an integer from 1 to 65536', chunkSize, 'range');
  const doubleBuffered = o.doubleBuffered ?? true;
  if (typeof doubleBuffered !== 'boolean') throw invalidParameterError('doubleBuffered', 'a boolean', doubleBuffered, 'type');
  return { chunkSize, doubleBuffered };
}

/** Throws naming the field unless a chain may generate `count` tokens after position `start` of a sequence buffer of `capacity` tokens. */
export function checkChainRange(capacity: number, start: unknown, count: unknown): void {
  if (!isInteger(start) || start < 0 || start >= capacity - 1) {
    throw invalidParameterError(
      'start',
      `a position from 0 to ${capacity - 2} (the sequence buffer holds ${capacity} tokens)`,
      start,
      isInteger(start) ? 'range' : 'type',
    );
  }
  if (!isInteger(count) || count < 0) throw invalidParameterError('count', 'a non-negative integer', count, isInteger(count) ? 'range' : 'type');
  if (start + count >= capacity) {
    throw invalidParameterError('count', `at most ${capacity - 1 - start} (the sequence buffer holds ${capacity} tokens)`, count, 'range');
  }
}

/** Replays one table over one sequence buffer. */
export class ChainRunner {
  readonly #table: DispatchTable;
  readonly #sequence: GpuBuffer;
  readonly #noToken: number;
  #inFlight = 0;
  #busy = false;

  /** `sequence` is the token buffer the table's token-offset and output patches address. */
  constructor(table: DispatchTable, sequence: GpuBuffer) {
    if (!(table instanceof DispatchTable)) throw invalidParameterError('table', 'a DispatchTable', table, 'type');
    if (!(sequence instanceof GpuBuffer)) throw invalidParameterError('sequence', 'a GpuBuffer', sequence, 'type');
    this.#table = table;
    this.#sequence = sequence;
    this.#noToken = table.device.addon.noToken;
  }

  /** Chunks submitted and not yet finished (at most 2). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** The number of tokens the sequence buffer holds. */
  get capacity(): number {
    return this.#sequence.byteLength / 4;
  }

  /**
   * Generates `count` tokens after the token at `start` (which must already
   * be in the sequence buffer): positions start + 1 .. start + count. Yields
   * them chunk by chunk. Stops with NoTokenError (after yielding the tokens
   * before it) at a step whose logits were all -inf. Breaking out of the loop
   * waits for the chunk still on the GPU, so the buffer is quiet afterwards.
   */
  async *run(start: number, count: number, options?: ChainOptions): AsyncGenerator<ChainChunk, void, undefined> {
    const { chunkSize, doubleBuffered } = resolveChainOptions(options);
    checkChainRange(this.capacity, start, count);
    if (this.#busy) throw new Error('This chain is already running; one run at a time per sequence buffer');
    this.#busy = true;

    const submit = (from: number, n: number) => {
      this.#inFlight++;
      const done = this.#table.device.runChain(this.#table, from, n).finally(() => this.#inFlight--);
      done.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      return { from, n, done };
    };
    let next = 0; // tokens submitted so far
    const queue: ReturnType<typeof submit>[] = [];
    const submitNext = () => {
      const n = Math.min(chunkSize, count - next);
      queue.push(submit(start + next, n));
      next += n;
    };
    try {
      while (queue.length > 0 || next < count) {
        if (queue.length === 0) submitNext();
        const chunk = queue[0];
        if (doubleBuffered && next < count && queue.length < 2) submitNext();
        await chunk.done;
        queue.shift();
        const tokens = this.#sequence.readUint32(chunk.from + 1, chunk.n);
        const stop = tokens.indexOf(this.#noToken);
        if (stop >= 0) {
          if (stop > 0) yield { position: chunk.from + 1, tokens: tokens.subarray(0, stop) };
          throw new NoTokenError();
        }
        yield { position: chunk.from + 1, tokens };
      }
    } finally {
      // Leave nothing running on the buffer (early return, error or abort).
      await Promise.allSettled(queue.map((c) => c.done));
      this.#busy = false;
    }
  }
}
