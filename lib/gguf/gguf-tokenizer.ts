// gguf-tokenizer.ts: a GGUF file's vocabulary as the decode loop's
// Tokenizer, with llama.cpp's behaviour: byte-level BPE (gpt2) or
// SentencePiece (llama) encoding, special tokens read from the text only
// when asked (parse_special), and token bytes for streaming: byte-level
// symbols, ▁ as a space, <0xNN> byte tokens, control tokens as empty text.

import type { Tokenizer } from '../generate/model.js';
import type { GgufHeader } from './read-header.js';
import { invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { bytesOfByteLevel } from '../tokenizers/byte-level.js';
import { cleanSpaces } from '../tokenizers/clean-spaces.js';
import { readVocabulary, type GgufVocabulary } from '../tokenizers/gguf-vocabulary.js';
import type { EncodeRequest } from '../tokenizers/encoder.js';
import { EncoderThread } from '../tokenizers/encoder-thread.js';
import { specialTokens } from '../tokenizers/special-tokens.js';
import { isSpecial, TOKEN_TYPE } from '../tokenizers/token-types.js';
import { checkKnownKeys } from '../sampling-options.js';

export interface EncodeOptions {
  /**
   * Read the texts of control tokens (<|im_start|>, <|eot_id|>, ...) as
   * those tokens, as llama.cpp's parse_special. Default false: they are
   * text, so user input cannot inject a turn marker. Turn this on only for
   * text your code wrote, such as a rendered chat template.
   */
  special?: boolean;
  /**
   * The text continues text already in the sequence: a SentencePiece
   * vocabulary then puts no space before it. Default false.
   */
  afterText?: boolean;
}

export interface DecodeOptions {
  /** Give control tokens their text instead of none. Default false. */
  special?: boolean;
}

const EMPTY = new Uint8Array(0);
// ignoreBOM: a U+FEFF token is text like any other.
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });
function checkOptions(name: string, options: unknown, keys: string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (!isPlainObject(options)) throw invalidParameterError(name, 'a plain object', options, 'type');
  checkKnownKeys(options, new Set(keys), `${name}.`);
  for (const key of keys) {
    const value = options[key];
    if (value !== undefined && typeof value !== 'boolean') throw invalidParameterError(`${name}.${key}`, 'a boolean', value, 'type');
  }
  return options;
}

export class GgufTokenizer implements Tokenizer {
  readonly #v: GgufVocabulary;
  readonly #cache: (Uint8Array | undefined)[];
  #specialTexts: string[] | undefined;
  #thread: EncoderThread | undefined;

  private constructor(vocabulary: GgufVocabulary) {
    this.#v = vocabulary;
    this.#cache = new Array(vocabulary.tokens.length);
  }

  /** undefined when the file has no vocabulary; GgufError when it has a malformed one. */
  static fromHeader({ path, metadata, bpeMerges }: GgufHeader, vocabSize: number): GgufTokenizer | undefined {
    const vocabulary = readVocabulary(path, metadata, vocabSize, bpeMerges);
    return vocabulary && new GgufTokenizer(vocabulary);
  }

  /** 'gpt2' (byte-level BPE) or 'llama' (SentencePiece): tokenizer.ggml.model. */
  get kind(): 'gpt2' | 'llama' {
    return this.#v.model;
  }

  /** The beginning-of-sequence token (tokenizer.ggml.bos_token_id). */
  get bosToken(): number | undefined {
    return this.#v.bos;
  }

  /** Whether a text prompt that starts a sequence begins with bosToken (tokenizer.ggml.add_bos_token). */
  get addBosToken(): boolean {
    return this.#v.addBos;
  }

  /** Whether an embedding's input ends with eosToken (tokenizer.ggml.add_eos_token), as llama.cpp's tokenizer adds it. */
  get addEosToken(): boolean {
    return this.#v.addEos;
  }

  /** The end-of-sequence token (tokenizer.ggml.eos_token_id); endOfGenerationTokens has every token that ends a reply. */
  get eosToken(): number | undefined {
    return this.#v.eos;
  }

  /** Every token that ends generation (EOS, EOT, <|im_end|>, <|eot_id|>, ...), as llama.cpp finds them. */
  get endOfGenerationTokens(): readonly number[] {
    return this.#v.endOfGeneration;
  }

  /** The texts of the control tokens encode() finds when special tokens are parsed, longest first. */
  specialTexts(): readonly string[] {
    return (this.#specialTexts ??= specialTokens(this.#v, true)
      .filter(({ id }) => isSpecial(this.#v.types[id]))
      .map(({ text }) => text));
  }

  /** The text of a token as the vocabulary spells it (its piece, not its bytes). */
  tokenText(token: number): string | undefined {
    return this.#v.tokens[token];
  }

  /**
   * The ids of `text`, without BOS (a Session adds it at the start of a
   * sequence), before it returns: by the tokenizer's worker thread, whose
   * encoder loadModel built, while this thread waits (about 0.5 ms per KB
   * of text). encodeAsync() gives the same ids without waiting.
   */
  encode(text: string, options?: EncodeOptions): number[] {
    return Array.from((this.#thread ??= new EncoderThread(this.#v)).encodeSync(this.#request(text, options)));
  }

  /** encode() on the tokenizer's worker thread: the same ids, and the event loop never waits. */
  async encodeAsync(text: string, options?: EncodeOptions): Promise<number[]> {
    return this.#encodeOffThread(this.#request(text, options));
  }

  /**
   * Text made of pieces, some with special tokens parsed (a chat template's
   * markers) and some not (the messages), encoded as one text would be:
   * special tokens split out, then each run of text between them encoded
   * whole, on the worker thread.
   */
  encodePieces(pieces: readonly { text: string; special: boolean }[], options?: { afterText?: boolean }): Promise<number[]> {
    const o = checkOptions('options', options, ['afterText']);
    if (!Array.isArray(pieces)) throw invalidParameterError('pieces', 'an array of { text, special }', pieces, 'type');
    const checked = pieces.map((p: unknown, i) => {
      const piece = p as { text?: unknown; special?: unknown };
      if (typeof piece?.text !== 'string') throw invalidParameterError(`pieces[${i}].text`, 'a string', piece?.text, 'type');
      if (typeof piece.special !== 'boolean') throw invalidParameterError(`pieces[${i}].special`, 'a boolean', piece.special, 'type');
      return { text: piece.text, special: piece.special };
    });
    return this.#encodeOffThread({ pieces: checked, afterText: o.afterText === true });
  }

  async #encodeOffThread(request: EncodeRequest): Promise<number[]> {
    return Array.from(await (this.#thread ??= new EncoderThread(this.#v)).encode(request));
  }

  /** Builds the worker thread's encoders now, so the first prompt does not wait for them (loadModel calls it). */
  prepare(): Promise<void> {
    return (this.#thread ??= new EncoderThread(this.#v)).prepare();
  }

  /** Ends the worker thread (GgufModel.dispose() calls it). */
  dispose(): void {
    this.#thread?.dispose();
  }

  #request(text: unknown, options: unknown): EncodeRequest {
    if (typeof text !== 'string') throw invalidParameterError('text', 'a string', text, 'type');
    const o = checkOptions('options', options, ['special', 'afterText']);
    return { pieces: [{ text, special: o.special === true }], afterText: o.afterText === true };
  }

  /**
   * The text of `tokens`, as llama.cpp's detokenize: control tokens empty
   * unless `special`, a SentencePiece vocabulary's leading space (the one
   * encode() puts before the text) removed, and for most byte-level BPE
   * vocabularies (Llama 3's, GPT-2's; not Qwen's or SmolLM's) the space
   * before punctuation and contractions removed, as Hugging Face's
   * clean_up_tokenization_spaces.
   */
  decode(tokens: ArrayLike<number>, options?: DecodeOptions): string {
    const special = checkOptions('options', options, ['special']).special === true;
    if (!Array.isArray(tokens) && !ArrayBuffer.isView(tokens)) {
      throw invalidParameterError('tokens', 'an array of token ids (or a typed array)', tokens, 'type');
    }
    const parts: Uint8Array[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const id = this.#checkToken(`tokens[${i}]`, tokens[i]);
      let bytes = special ? this.#bytes(id, true) : this.tokenBytes(id);
      if (i === 0 && this.#v.addSpacePrefix && bytes[0] === 0x20) bytes = bytes.subarray(1);
      parts.push(bytes);
    }
    const text = UTF8.decode(Buffer.concat(parts));
    return this.#v.cleanSpaces ? cleanSpaces(text) : text;
  }

  /** The UTF-8 bytes `token` stands for in generated text; empty for control tokens. A RangeError for an id outside the vocabulary, as decode(). */
  tokenBytes(token: number): Uint8Array {
    return (this.#cache[token] ??= this.#bytes(this.#checkToken('token', token), false));
  }

  // The one check of a token id, for decode() and tokenBytes().
  #checkToken(name: string, id: unknown): number {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= this.#v.tokens.length) {
      throw invalidParameterError(name, `a token id from 0 to ${this.#v.tokens.length - 1}`, id, typeof id === 'number' ? 'range' : 'type');
    }
    return id;
  }

  // llama.cpp's token_to_piece.
  #bytes(token: number, special: boolean): Uint8Array {
    const piece = this.#v.tokens[token];
    const type = this.#v.types[token];
    if (piece === undefined) return EMPTY;
    if (isSpecial(type)) return special ? Buffer.from(piece, 'utf8') : EMPTY;
    if (type === TOKEN_TYPE.userDefined) return Buffer.from(piece, 'utf8');
    if (type === TOKEN_TYPE.byte) return byteTokenBytes(piece);
    if (type !== TOKEN_TYPE.normal) return EMPTY;
    return this.#v.model === 'gpt2' ? (bytesOfByteLevel(piece) ?? Buffer.from(piece, 'utf8')) : Buffer.from(piece.replaceAll('\u2581', ' '), 'utf8');
  }
}

function byteTokenBytes(piece: string): Uint8Array {
  const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  return byte ? Uint8Array.of(parseInt(byte[1], 16)) : Buffer.from(piece, 'utf8');
}
