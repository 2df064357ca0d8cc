// bpe-merge-table.ts: a byte-level BPE vocabulary's merges as a hash table
// from a pair of symbol ids to the merge's rank and the merged symbol, in
// one Int32Array (open addressing, linear probing). Llama 3's 280,147
// merges take 8 MiB here; as JavaScript strings, pair arrays and a Map
// with string keys they took about ten times that. The array lives in a
// SharedArrayBuffer: the thread that builds it and the threads that read
// it share one copy. The hash takes a random seed per table, so a file
// cannot choose merges that all probe the same slots (quadratic time).

const EMPTY = -1;
/** Int32s a slot: left, right, rank, merged. */
const SLOT = 4;
/** The table is at most this full, so a probe ends after a few slots. */
const MAX_LOAD = 0.7;

/** A table as it crosses threads. */
export interface MergeTableData {
  /** In a SharedArrayBuffer. */
  slots: Int32Array;
  seed: number;
}

export class MergeTable {
  readonly slots: Int32Array;
  readonly seed: number;
  readonly #mask: number;

  /** An empty table for up to `count` merges, or one over a table built elsewhere. */
  constructor(count: number | MergeTableData) {
    if (typeof count === 'number') {
      let capacity = 16;
      while (capacity * MAX_LOAD < count) capacity *= 2;
      this.slots = new Int32Array(new SharedArrayBuffer(capacity * SLOT * Int32Array.BYTES_PER_ELEMENT)).fill(EMPTY);
      this.seed = crypto.getRandomValues(new Int32Array(1))[0];
    } else {
      this.slots = count.slots;
      this.seed = count.seed;
    }
    this.#mask = this.slots.length / SLOT - 1;
  }

  /** Adds a merge; a pair already in the table keeps its first (lowest) rank, as llama.cpp's emplace. */
  add(left: number, right: number, rank: number, merged: number): void {
    const at = this.#find(left, right);
    if (this.slots[at] !== EMPTY) return;
    this.slots[at] = left;
    this.slots[at + 1] = right;
    this.slots[at + 2] = rank;
    this.slots[at + 3] = merged;
  }

  /** The rank of merging `left` and `right`, or -1 when they do not merge. */
  rank(left: number, right: number): number {
    const at = this.#find(left, right);
    return this.slots[at] === EMPTY ? -1 : this.slots[at + 2];
  }

  /** The symbol `left` and `right` merge into (they must merge). */
  merged(left: number, right: number): number {
    return this.slots[this.#find(left, right) + 3];
  }

  // The slot holding the pair, or the empty slot where it would go.
  #find(left: number, right: number): number {
    // Ids are small and dense: mix them so every bit reaches the low ones.
    let slot = Math.imul(left ^ this.seed, 0x9e3779b1) ^ Math.imul(right, 0x85ebca77);
    slot = Math.imul(slot ^ (slot >>> 16), 0x45d9f3b);
    slot ^= slot >>> 16;
    for (;;) {
      slot &= this.#mask;
      const at = slot * SLOT;
      const held = this.slots[at];
      if (held === EMPTY || (held === left && this.slots[at + 1] === right)) return at;
      slot++;
    }
  }
}
