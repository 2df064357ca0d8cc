// sentencepiece.ts: the SentencePiece tokenizer of GGUF files
// (tokenizer.ggml.model = "llama": Llama 2, Mistral, TinyLlama...), as
// llama.cpp runs it on a run of text between special tokens. Spaces become
// ▁ (and the run may get a leading one); then adjacent symbols merge,
// highest-scoring token first (ties: leftmost), and a character no token
// covers falls back to its UTF-8 bytes as <0xNN> tokens.
//
// Written here rather than taken from @huggingface/tokenizers: that
// library's BPE needs a merge list, and these files carry scores instead.
import type { GgufVocabulary } from './gguf-vocabulary.js';

const SPACE_MARKER = '\u2581';

/** A pair of adjacent symbols that could merge into `token`. */
interface Bigram {
  left: number;
  right: number;
  score: number;
  length: number;
}

// A binary max-heap on (score, then lower left), llama.cpp's queue order.
class BigramQueue {
  readonly #items: Bigram[] = [];

  get size(): number {
    return this.#items.length;
  }

  static #before(a: Bigram, b: Bigram): boolean {
    return a.score > b.score || (a.score === b.score && a.left < b.left);
  }

  push(item: Bigram): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!BigramQueue.#before(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): Bigram {
    const items = this.#items;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1,
          r = l + 1;
        let best = i;
        if (l < items.length && BigramQueue.#before(items[l], items[best])) best = l;
        if (r < items.length && BigramQueue.#before(items[r], items[best])) best = r;
        if (best === i) break;
        [items[i], items[best]] = [items[best], items[i]];
        i = best;
      }
    }
    return top;
  }
}

/**
 * An encoder of text runs (between special tokens) for the vocabulary;
 * `leadingSpace`: put a space before the run (llama.cpp does at the start
 * of a prompt and after a special token, when add_space_prefix is on).
 */
export function sentencePieceEncoder(v: GgufVocabulary): (text: string, leadingSpace: boolean) => number[] {
  const ids = new Map<string, number>();
  v.tokens.forEach((token, id) => ids.set(token, id)); // a repeated text is its last id, as llama.cpp
  const scores = v.scores!;
  const byteTokens = Array.from({ length: 256 }, (_, b) => {
    const hex = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
    return ids.get(hex) ?? ids.get(String.fromCharCode(b));
  });

  function byteFallback(char: string, out: number[]): void {
    for (const b of Buffer.from(char, 'utf8')) {
      const id = byteTokens[b];
      if (id === undefined)
        throw new Error(
          `The vocabulary has no token for byte 0x${b.toString(16).padStart(2, '0')} (<0x${b.toString(16).toUpperCase().padStart(2, '0')}>), needed for ${JSON.stringify(char)}`,
        );
      out.push(id);
    }
  }

  // llama.cpp's llm_tokenizer_spm_session.
  return (text, leadingSpace) => {
    const out: number[] = [];
    const spaced = (leadingSpace ? ' ' : '') + text;
    const chars = Array.from(Buffer.from(spaced.replaceAll(' ', SPACE_MARKER), 'utf8').toString('utf8')); // a lone surrogate is U+FFFD, as in its UTF-8
    const n = chars.length;
    const symbols = chars.slice();
    const lengths = new Int32Array(n).fill(1);
    const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
    const next = Int32Array.from({ length: n }, (_, i) => (i + 1 < n ? i + 1 : -1));
    const queue = new BigramQueue();
    const tryBigram = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const merged = symbols[left] + symbols[right];
      const id = ids.get(merged);
      if (id === undefined) return;
      queue.push({ left, right, score: scores[id], length: lengths[left] + lengths[right] });
    };
    for (let i = 1; i < n; i++) tryBigram(i - 1, i);
    while (queue.size > 0) {
      const { left, right, length } = queue.pop();
      // Skip a pair one of whose symbols has merged since it was queued.
      if (lengths[left] === 0 || lengths[right] === 0 || lengths[left] + lengths[right] !== length) continue;
      symbols[left] += symbols[right];
      lengths[left] += lengths[right];
      lengths[right] = 0;
      next[left] = next[right];
      if (next[right] >= 0) prev[next[right]] = left;
      tryBigram(prev[left], left);
      tryBigram(left, next[left]);
    }
    for (let i = 0; i !== -1 && n > 0; i = next[i]) {
      const id = ids.get(symbols[i]);
      if (id !== undefined) out.push(id);
      else byteFallback(symbols[i], out); // only single characters are left without a token
    }
    return out;
  };
}
