// bpe-model.ts: byte-level BPE on one pre-tokenized word, as llama.cpp's
// llm_tokenizer_bpe_session runs it: of the adjacent pairs of symbols, the
// one with the lowest merge rank merges first (the leftmost of equals),
// until no pair has a rank; each symbol left is the token of its text.
// Symbols are ids and the merges a MergeTable of them (bpe-merges.ts), so
// a vocabulary of 150,000 tokens and merges costs a few MiB beside its
// token texts.
import { MergeTable } from './bpe-merge-table.js';
import { BpeSymbols, type CompiledMerges } from './bpe-merges.js';
import { byteLevelChars } from './byte-level.js';

/** Words shorter than this are remembered, up to CACHE_WORDS of them. */
const CACHE_CHARS = 256;
const CACHE_WORDS = 10_000;
const DEAD = -1;

export interface BpeVocabulary {
  tokens: readonly string[];
  merges: CompiledMerges;
  /** Llama 3: a word that is a token is that token, merged or not. */
  ignoreMerges: boolean;
}

export class BpeModel {
  readonly #symbols: BpeSymbols;
  /** The symbol of each byte-level character, by its UTF-16 code. */
  readonly #charSymbols: Int32Array;
  readonly #merges: MergeTable;
  readonly #ignoreMerges: boolean;
  readonly #cache = new Map<string, readonly number[]>();

  constructor({ tokens, merges, ignoreMerges }: BpeVocabulary) {
    // The texts that are no token come in the order compileMerges() gave them their ids.
    this.#symbols = new BpeSymbols(tokens, [...merges.otherTexts]);
    this.#merges = new MergeTable(merges.table);
    this.#ignoreMerges = ignoreMerges;
    const chars = byteLevelChars();
    this.#charSymbols = new Int32Array(Math.max(...chars.map((c) => c.charCodeAt(0))) + 1).fill(DEAD);
    for (const c of chars) this.#charSymbols[c.charCodeAt(0)] = this.#symbols.of(c);
  }

  /** Appends the token ids of one word (byte-level text) to `out`. */
  encodeWord(word: string, out: number[]): void {
    const whole = this.#ignoreMerges ? this.#symbols.ids.get(word) : undefined;
    if (whole !== undefined) {
      out.push(whole);
      return;
    }
    let ids = this.#cache.get(word);
    if (ids === undefined) {
      ids = this.#tokensOf(this.#merged(word));
      if (word.length < CACHE_CHARS) {
        if (this.#cache.size >= CACHE_WORDS) this.#cache.clear();
        this.#cache.set(word, ids);
      }
    }
    for (const id of ids) out.push(id);
  }

  // The word's symbols after every merge.
  #merged(word: string): number[] {
    const n = word.length;
    const symbols = new Int32Array(n);
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const code = word.charCodeAt(i);
      const s = code < this.#charSymbols.length ? this.#charSymbols[code] : DEAD;
      if (s === DEAD) throw new Error(`BPE word ${JSON.stringify(word)} has a character outside the byte-level alphabet at ${i}`);
      symbols[i] = s;
      next[i] = i + 1 < n ? i + 1 : DEAD;
      prev[i] = i - 1;
    }
    // Candidates keyed rank * n + left: the lowest rank first, then the leftmost.
    const queue = new MinQueue();
    const offer = (left: number) => {
      const right = next[left];
      if (right === DEAD) return;
      const rank = this.#merges.rank(symbols[left], symbols[right]);
      if (rank >= 0) queue.push(rank * n + left);
    };
    for (let i = 0; i + 1 < n; i++) offer(i);
    while (queue.size > 0) {
      const key = queue.pop();
      const left = key % n;
      const right = next[left];
      // Stale: the left symbol merged away, or its pair is no longer this one.
      if (symbols[left] === DEAD || right === DEAD) continue;
      const rank = (key - left) / n;
      if (this.#merges.rank(symbols[left], symbols[right]) !== rank) continue;
      symbols[left] = this.#merges.merged(symbols[left], symbols[right]);
      symbols[right] = DEAD;
      next[left] = next[right];
      if (next[right] !== DEAD) prev[next[right]] = left;
      if (prev[left] >= 0) offer(prev[left]);
      offer(left);
    }
    const left: number[] = [];
    for (let i = 0; i !== DEAD; i = next[i]) left.push(symbols[i]);
    return left;
  }

  // Tokens of the symbols; a symbol that is no token gives the tokens of
  // its one-byte characters, as llama.cpp's text_to_token of each byte.
  #tokensOf(symbols: readonly number[]): number[] {
    const ids: number[] = [];
    for (const s of symbols) {
      if (s < this.#symbols.vocabSize) {
        ids.push(s);
        continue;
      }
      for (const c of this.#symbols.otherTexts[s - this.#symbols.vocabSize]) {
        const id = c.charCodeAt(0) < 0x80 ? this.#symbols.ids.get(c) : undefined;
        if (id !== undefined) ids.push(id);
      }
    }
    return ids;
  }
}

/** A binary min-heap of numbers. */
class MinQueue {
  readonly #items: number[] = [];

  get size(): number {
    return this.#items.length;
  }

  push(item: number): void {
    const items = this.#items;
    let i = items.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent] <= item) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  pop(): number {
    const items = this.#items;
    const top = items[0];
    const last = items.pop()!;
    const n = items.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && items[child + 1] < items[child]) child++;
        if (items[child] >= last) break;
        items[i] = items[child];
        i = child;
      }
      items[i] = last;
    }
    return top;
  }
}
