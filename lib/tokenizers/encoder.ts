// encoder.ts: text to token ids for a GGUF vocabulary, as llama.cpp's
// llama_tokenize: special tokens are split out first (special-tokens.ts:
// user-defined ones always, control ones when parsed), then each run of
// text between them is encoded by the vocabulary's BPE or SentencePiece.
// The one function the model's tokenizer (on the main thread) and its
// worker thread share.
//
// Long runs are encoded in pieces that split where both encoders split
// anyway: at a newline followed by a letter (the pre-tokenizers'
// expressions all end a piece there, and no SentencePiece merge crosses it
// unless a token spells a newline and a letter; then the run stays whole).
import { bpeEncoder } from './gguf-bpe.js';
import type { GgufVocabulary } from './gguf-vocabulary.js';
import { sentencePieceEncoder } from './sentencepiece.js';
import { partition, specialTokens, type Fragment } from './special-tokens.js';

/** Runs of text longer than this are encoded in pieces. */
export const CHUNK_CHARS = 8192;

/** Text, and whether special tokens' texts in it are those tokens. */
export interface TextPiece {
  text: string;
  special: boolean;
}

export interface EncodeRequest {
  /** The text, in pieces; consecutive text between special tokens is encoded as one run. */
  pieces: TextPiece[];
  /** The text continues text already in the sequence (SentencePiece: no leading space). */
  afterText: boolean;
}

export class VocabularyEncoder {
  readonly #v: GgufVocabulary;
  #runEncoder: ((text: string, leadingSpace: boolean) => number[]) | undefined;
  readonly #specials = new Map<boolean, { id: number; text: string }[]>();
  #splittable: boolean | undefined;

  constructor(vocabulary: GgufVocabulary) {
    this.#v = vocabulary;
  }

  /** Builds the encoder now (a map of every token text), ahead of the first text. */
  prepare(): void {
    this.#encoder();
  }

  encode({ pieces, afterText }: EncodeRequest): number[] {
    const fragments: Fragment[] = [];
    for (const piece of pieces) {
      for (const f of partition(piece.text, this.#specialTokens(piece.special))) {
        const last = fragments.length - 1;
        if (typeof f === 'string' && typeof fragments[last] === 'string') fragments[last] += f;
        else fragments.push(f);
      }
    }
    const encoder = this.#encoder();
    const out: number[] = [];
    let afterRun = afterText;
    for (const fragment of fragments) {
      if (typeof fragment === 'number') {
        out.push(fragment);
        afterRun = false;
        continue;
      }
      for (const chunk of this.#chunks(fragment)) {
        for (const id of encoder(chunk, this.#v.addSpacePrefix && !afterRun)) out.push(id);
        afterRun = true;
      }
    }
    return out;
  }

  #encoder(): (text: string, leadingSpace: boolean) => number[] {
    return (this.#runEncoder ??= this.#v.model === 'llama' ? sentencePieceEncoder(this.#v) : bpeEncoder(this.#v));
  }

  #specialTokens(parse: boolean): { id: number; text: string }[] {
    let found = this.#specials.get(parse);
    if (found === undefined) this.#specials.set(parse, (found = specialTokens(this.#v, parse)));
    return found;
  }

  *#chunks(text: string): Generator<string> {
    this.#splittable ??= !this.#v.tokens.some((t) => /\n\p{L}/u.test(t));
    const cuts = /\n(?=\p{L})/gu;
    let at = 0;
    while (this.#splittable && text.length - at > CHUNK_CHARS) {
      cuts.lastIndex = at + CHUNK_CHARS;
      const cut = cuts.exec(text);
      if (cut === null) break;
      yield text.slice(at, cut.index + 1);
      at = cut.index + 1;
    }
    yield at === 0 ? text : text.slice(at);
  }
}
