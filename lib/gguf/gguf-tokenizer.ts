// gguf-tokenizer.ts: a GGUF vocabulary as the decode loop's Tokenizer. Each
// token's bytes come from tokenizer.ggml.tokens: byte-level BPE symbols
// (gpt2) or SentencePiece pieces with the ▁ space marker and <0xNN> byte
// tokens (llama); control tokens read as empty text. Text is encoded by the
// byte-level BPE of lib/tokenizers (gpt2 files), with special tokens read
// as text, so user text cannot inject a turn marker. SentencePiece
// encoding is not built yet.
import type { MetadataValue } from '@huggingface/gguf';

import type { Tokenizer } from '../generate/model.js';
import { bpeEncoder, bpeVocabulary, TOKEN_TYPE, type BpeVocabulary } from '../tokenizers/gguf-bpe.js';
import { GgufError } from './gguf-error.js';


const EMPTY = new Uint8Array(0);
let byteLevel: Map<number, number> | undefined;

// GPT-2's byte-level alphabet: each byte as a printable code point.
function byteLevelDecoder(): Map<number, number> {
  const bytes: number[] = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const codePoints = [...bytes];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      codePoints.push(256 + extra++);
    }
  }
  return new Map(codePoints.map((c, i) => [c, bytes[i]]));
}

export class GgufTokenizer implements Tokenizer {
  readonly #pieces: readonly string[];
  readonly #types: ArrayLike<number> | undefined;
  readonly #model: 'gpt2' | 'llama';
  readonly #cache: (Uint8Array | undefined)[];
  readonly #bpe: BpeVocabulary | undefined;
  #encode: ((text: string) => number[]) | undefined;

  private constructor(pieces: readonly string[], types: ArrayLike<number> | undefined, model: 'gpt2' | 'llama', bpe?: BpeVocabulary) {
    this.#pieces = pieces;
    this.#types = types;
    this.#model = model;
    this.#cache = new Array(pieces.length);
    this.#bpe = bpe;
  }

  /** undefined when the file has no vocabulary; GgufError when it has a malformed one. */
  static fromMetadata(path: string, metadata: Readonly<Record<string, MetadataValue>>, vocabSize: number): GgufTokenizer | undefined {
    const pieces = metadata['tokenizer.ggml.tokens'];
    if (pieces === undefined) return undefined;
    if (!Array.isArray(pieces) || pieces.some((p) => typeof p !== 'string')) throw new GgufError(path, 'tokenizer.ggml.tokens', 'expected an array of strings');
    if (pieces.length !== vocabSize) throw new GgufError(path, 'tokenizer.ggml.tokens', `${pieces.length} tokens, but token_embd.weight has ${vocabSize} rows`);
    const model = metadata['tokenizer.ggml.model'];
    if (model !== 'gpt2' && model !== 'llama') throw new GgufError(path, 'tokenizer.ggml.model', `"${String(model)}" is not supported (supported: gpt2, llama)`);
    const types = metadata['tokenizer.ggml.token_type'];
    if (types !== undefined && (!Array.isArray(types) || types.length !== vocabSize || types.some((t) => typeof t !== 'number'))) {
      throw new GgufError(path, 'tokenizer.ggml.token_type', `expected ${vocabSize} numbers`);
    }
    const bpe = model === 'gpt2' ? bpeVocabulary(path, metadata) : undefined;
    return new GgufTokenizer(pieces as string[], types as number[] | undefined, model, bpe);
  }

  /** The ids of `text`, special tokens read as text; built on first use (a large vocabulary takes a second or two). */
  encode(text: string): ArrayLike<number> {
    if (this.#bpe === undefined) {
      throw new Error('encode: this model\'s SentencePiece tokenizer (tokenizer.ggml.model "llama") is not built yet; pass the prompt as token ids');
    }
    this.#encode ??= bpeEncoder(this.#bpe, false);
    return this.#encode(text);
  }

  tokenBytes(token: number): Uint8Array {
    const cached = this.#cache[token];
    if (cached !== undefined) return cached;
    const piece = this.#pieces[token];
    let bytes: Uint8Array = EMPTY;
    if (piece !== undefined && this.#types?.[token] !== TOKEN_TYPE.control) {
      bytes = this.#model === 'gpt2' ? byteLevelBytes(piece) : sentencePieceBytes(piece);
    }
    this.#cache[token] = bytes;
    return bytes;
  }
}

function byteLevelBytes(piece: string): Uint8Array {
  const decoder = (byteLevel ??= byteLevelDecoder());
  const out: number[] = [];
  for (const ch of piece) {
    const b = decoder.get(ch.codePointAt(0)!);
    if (b === undefined) return Buffer.from(piece, 'utf8');  // not a byte-level symbol: the text itself
    out.push(b);
  }
  return Uint8Array.from(out);
}

function sentencePieceBytes(piece: string): Uint8Array {
  const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (byte) return Uint8Array.of(parseInt(byte[1], 16));
  return Buffer.from(piece.replaceAll('\u2581', ' '), 'utf8');
}
