// encoder.ts: text to token ids for a GGUF vocabulary, the one function
// the model's tokenizer (on the main thread) and its encoder thread share.
// Long text is encoded in pieces that split where every encoder here splits
// anyway: at a newline followed by a letter (the pre-tokenizers'
// expressions all end a piece there, and no SentencePiece merge crosses it
// unless a token spells a newline and a letter; then the text stays whole).
import { bpeEncoder } from './gguf-bpe.js';
import type { GgufVocabulary } from './gguf-vocabulary.js';
import { sentencePieceEncoder } from './sentencepiece.js';

/** Texts longer than this are encoded in pieces. */
export const CHUNK_CHARS = 8192;

export interface EncodeRequest {
  text: string;
  /** Parse special tokens' texts as those tokens. */
  special: boolean;
  /** The text continues text already in the sequence (SentencePiece: no leading space). */
  afterText: boolean;
}

export class VocabularyEncoder {
  readonly #v: GgufVocabulary;
  readonly #encoders = new Map<boolean, (text: string, afterText?: boolean) => number[]>();
  #splittable: boolean | undefined;

  constructor(vocabulary: GgufVocabulary) {
    this.#v = vocabulary;
  }

  /** Builds the encoders now (a large vocabulary takes a few hundred milliseconds). */
  prepare(): void {
    this.#encoder(false);
    this.#encoder(true);
  }

  encode({ text, special, afterText }: EncodeRequest): number[] {
    const encoder = this.#encoder(special);
    const out: number[] = [];
    let first = true;
    for (const chunk of this.#chunks(text)) {
      for (const id of encoder(chunk, afterText || !first)) out.push(id);
      first = false;
    }
    return out;
  }

  #encoder(special: boolean): (text: string, afterText?: boolean) => number[] {
    let encoder = this.#encoders.get(special);
    if (encoder === undefined) {
      encoder = this.#v.model === 'llama' ? sentencePieceEncoder(this.#v, special) : bpeEncoder(this.#v, special);
      this.#encoders.set(special, encoder);
    }
    return encoder;
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
