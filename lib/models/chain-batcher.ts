// chain-batcher.ts: the chains of a GGUF model's GPU sequences, run
// together. A sequence decoding alone runs its own chain (double-buffered,
// with FlashSampling's fused head where it applies: chain.ts). When
// another sequence of the same model and shape is decoding, each asks for
// its next chunk here instead, and one submission runs the chunks of all
// that asked: a batched table whose rows are the sequences
// (gguf-sequence-rows.ts), which reads each weight once per step for up
// to 8 of them where their own chains read it once each.
//
// Continuous batching, as the CPU's SequenceBatcher does it: a pass
// starts when every decoding sequence has asked, or WAIT_MS after the
// first ask; a sequence that starts decoding joins the next pass, one that
// ends leaves it. A pass runs the fewest steps any of its rows asked for,
// and each row gets the tokens its own chain would have written (the
// batched table's rule), so who else decodes changes when a token comes,
// never which.
import { NoTokenError } from '../errors.js';
import { ChainRunner, checkChainRange, type ChainChunk } from '../gpu/chain.js';
import type { DispatchTable } from '../gpu/device.js';
import type { ChainSamplingOptions } from '../gpu/sampling-command.js';
import type { GgufForwardTable } from './gguf-forward-table.js';
import { MAX_SEQUENCE_ROWS, type SequenceRowsTables } from './gguf-sequence-rows.js';
import { WAIT_MS } from './sequence-batcher.js';

interface ChunkRequest {
  tables: GgufForwardTable;
  sampling: ChainSamplingOptions | undefined;
  from: number;
  count: number;
  resolve: (tokens: Uint32Array) => void;
  reject: (error: unknown) => void;
}

// The table of the last pass, kept while its rows go on asking.
interface PassTable {
  key: string;
  table: DispatchTable;
  members: readonly GgufForwardTable[];
  owned: boolean; // made for the pass (disposed with it), not a sequence's kept table
}

export class ChainBatcher {
  readonly #makeRows: () => SequenceRowsTables;
  #rows: SequenceRowsTables | undefined;
  #last: PassTable | undefined;
  /** Sequences inside a run(): a pass waits for each to ask. */
  readonly #decoding = new Set<GgufForwardTable>();
  #pending: ChunkRequest[] = [];
  #busy = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #ids = new WeakMap<object, number>();
  #nextId = 1;
  /** Passes run, the chunks in them, the most in one, and the steps of the batched ones (two or more rows). */
  readonly stats = { passes: 0, rows: 0, largest: 0, batchedSteps: 0 };

  /** makeRows: the model's batched-step tables, made on the first pass of two or more sequences. */
  constructor(makeRows: () => SequenceRowsTables) {
    this.#makeRows = makeRows;
  }

  /** The tokens after `start` (already in the token buffer), up to `count`, chunk by chunk: as a ChainRunner of the sequence's own table yields them. */
  async *run(
    tables: GgufForwardTable,
    sampling: ChainSamplingOptions | undefined,
    start: number,
    count: number,
    chunkSize: number,
  ): AsyncGenerator<ChainChunk, void, undefined> {
    checkChainRange(tables.contextSize, start, count);
    if (this.#decoding.has(tables)) throw new Error('This chain is already running; one run at a time per sequence buffer');
    this.#decoding.add(tables);
    let at = start,
      left = count;
    try {
      while (left > 0) {
        if (!this.#othersDecoding(tables)) {
          // Alone: its own chain, until another sequence starts decoding.
          const table = tables.tableFor(sampling);
          try {
            for await (const chunk of new ChainRunner(table, tables.tokens).run(at, left, { chunkSize })) {
              yield chunk;
              at += chunk.tokens.length;
              left -= chunk.tokens.length;
              if (this.#othersDecoding(tables)) break; // the chunk it queued ahead is done again in a pass
            }
          } finally {
            if (!tables.isKept(table)) table.dispose();
          }
          continue;
        }
        const tokens = await this.#chunk(tables, sampling, at, Math.min(chunkSize, left));
        const stop = tokens.indexOf(tables.noToken);
        if (stop >= 0) {
          if (stop > 0) yield { position: at + 1, tokens: tokens.subarray(0, stop) };
          throw new NoTokenError();
        }
        yield { position: at + 1, tokens };
        at += tokens.length;
        left -= tokens.length;
      }
    } finally {
      this.#decoding.delete(tables);
      this.#schedule();
    }
  }

  /** A sequence that is disposed: no kept table binds its buffers any longer. */
  forget(tables: GgufForwardTable): void {
    this.#decoding.delete(tables);
    if (this.#last?.members.includes(tables) && !this.#busy) this.#dropLast();
    this.#schedule();
  }

  dispose(): void {
    this.#dropLast();
    this.#rows?.dispose();
    this.#rows = undefined;
  }

  #othersDecoding(tables: GgufForwardTable): boolean {
    for (const other of this.#decoding) if (other !== tables) return true;
    return false;
  }

  #chunk(tables: GgufForwardTable, sampling: ChainSamplingOptions | undefined, from: number, count: number): Promise<Uint32Array> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ tables, sampling, from, count, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#busy || this.#pending.length === 0) return;
    const asked = new Set(this.#pending.map((r) => r.tables));
    if (this.#pending.length >= MAX_SEQUENCE_ROWS || [...this.#decoding].every((t) => asked.has(t))) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#pass();
    } else {
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        void this.#pass();
      }, WAIT_MS);
    }
  }

  async #pass(): Promise<void> {
    if (this.#busy || this.#pending.length === 0) return;
    const batch = this.#pending.splice(0, MAX_SEQUENCE_ROWS).sort((a, b) => this.#id(a.tables) - this.#id(b.tables));
    const steps = Math.min(...batch.map((r) => r.count));
    const base = Math.min(...batch.map((r) => r.from));
    this.#busy = true;
    this.stats.passes++;
    this.stats.rows += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    if (batch.length > 1) this.stats.batchedSteps += steps;
    try {
      const table = this.#tableFor(batch, base);
      await table.device.runChain(table, base, steps);
      for (const r of batch) r.resolve(r.tables.tokens.readUint32(r.from + 1, steps));
    } catch (error) {
      for (const r of batch) r.reject(error);
    } finally {
      this.#busy = false;
      // A sequence disposed during the pass: its buffers are let go now.
      if (this.#last?.members.some((t) => t.disposed)) this.#dropLast();
      this.#schedule();
    }
  }

  // The pass's table: the last one when the same rows ask at the same relative positions with the same options.
  #tableFor(batch: readonly ChunkRequest[], base: number): DispatchTable {
    const key = batch.map((r) => `${this.#id(r.tables)}+${r.from - base}:${r.sampling === undefined ? 0 : this.#id(r.sampling)}`).join(',');
    if (this.#last?.key === key) return this.#last.table;
    this.#dropLast();
    const members = batch.map((r) => r.tables);
    if (batch.length === 1) {
      const table = members[0]!.tableFor(batch[0]!.sampling);
      this.#last = { key, table, members, owned: !members[0]!.isKept(table) };
    } else {
      this.#rows ??= this.#makeRows();
      const table = this.#rows.table(batch.map((r) => ({ tables: r.tables, ahead: r.from - base, sampling: r.sampling })));
      this.#last = { key, table, members, owned: true };
    }
    return this.#last.table;
  }

  #dropLast(): void {
    if (this.#last?.owned) this.#last.table.dispose();
    this.#last = undefined;
  }

  #id(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) this.#ids.set(o, (id = this.#nextId++));
    return id;
  }
}
