// bigram.ts: the built-in factorised bigram model. The next-token logits
// depend only on the current token: logits = U . E[token], with the
// embedding E and the LM head U both vocabSize x dim float16. Small and
// exact, its distribution is known, so chained sampling can be checked
// statistically; on the GPU it is a real two-kernel forward pass
// (metal/bigram.metal). The CPU forward here gives the same bits.
import { readFile } from 'node:fs/promises';

import { integerInRange, invalidParameterError } from '../errors.js';
import { halfFromNumber, halfToNumber } from '../js/float16.js';
import { hash, noiseKey, uniform } from '../js/noise.js';
import { loadAddon } from '../native/load-addon.js';
import { isFiniteFloat32, isInteger, isPlainObject, isUint32 } from '../predicates.js';
import { BackendUnavailableError } from '../errors.js';
import type { DecodeModel, ModelSequence, Tokenizer } from '../generate/model.js';
import { MAX_VOCAB, resolveVocabulary, type ResolvedVocabulary, type Vocabulary } from '../generate/vocabulary.js';
import type { BackendChoice } from '../sampling-options.js';
import { openBigramSequence } from './bigram-sequence.js';
import type { BigramWeights } from './bigram-weights.js';
import { TEXT_EOS, textBigramWeights, type TextBigramOptions } from './bigram-text.js';
import { parseSafetensors, SafetensorsError, serializeSafetensors } from './safetensors.js';

export interface BigramSeedOptions {
  vocabSize: number;
  dim: number;
  /** uint32: the same seed gives the same weights everywhere. */
  seed: number;
  /** The standard deviation the logits are scaled to, about. Default 2. */
  logitScale?: number;
}

/** The tensor names a bigram safetensors file holds, both F16 [vocabSize, dim]. */
export const BIGRAM_TENSORS = { embedding: 'embedding', head: 'lm_head' } as const;

const MAX_DIM = 4096;

export class BigramModel implements DecodeModel, BigramWeights {
  readonly vocabSize: number;
  readonly dim: number;
  /** E: vocabSize x dim float16 bits, row-major. */
  readonly embedding: Uint16Array;
  /** U: vocabSize x dim float16 bits, row-major. */
  readonly head: Uint16Array;
  readonly tokenizer: Tokenizer;
  readonly eosTokens: readonly number[];

  private constructor(vocabSize: number, dim: number, embedding: Uint16Array, head: Uint16Array, vocabulary?: ResolvedVocabulary) {
    this.vocabSize = vocabSize;
    this.dim = dim;
    this.embedding = embedding;
    this.head = head;
    ({ tokenizer: this.tokenizer, eosTokens: this.eosTokens } = vocabulary ?? resolveVocabulary({}, vocabSize));
  }

  /**
   * A byte-level model counted from `text` (tokens 0-255 are bytes, token
   * 256 = TEXT_EOS ends a paragraph and is its end-of-sequence token).
   */
  static fromText(text: string, options?: TextBigramOptions): BigramModel {
    return BigramModel.fromWeights(textBigramWeights(text, options)).withVocabulary({ eosTokens: [TEXT_EOS] });
  }

  /** The same weights (shared, not copied) with another tokenizer or end-of-sequence tokens. */
  withVocabulary(vocabulary: Vocabulary): BigramModel {
    return new BigramModel(this.vocabSize, this.dim, this.embedding, this.head, resolveVocabulary(vocabulary, this.vocabSize));
  }

  /**
   * A sequence for generate() / Session: on 'metal' or 'emulated' the
   * chained dispatch tables, on 'native' or 'js' the CPU forward. 'auto' is
   * metal when it runs here, else native when the addon loaded, else js.
   */
  openSequence(options: { backend: BackendChoice; contextSize: number }): ModelSequence {
    return openBigramSequence(this, options);
  }

  /** Weights from a seed: uniform values scaled so the logits' spread is about logitScale. */
  static fromSeed(options: BigramSeedOptions): BigramModel {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object { vocabSize, dim, seed }', options, 'type');
    const { vocabSize, dim } = checkShape(options.vocabSize, options.dim);
    if (!isUint32(options.seed))
      throw invalidParameterError('seed', 'an integer from 0 to 4294967295', options.seed, isInteger(options.seed) ? 'range' : 'type');
    const scale = options.logitScale ?? 2;
    if (!isFiniteFloat32(scale) || scale <= 0)
      throw invalidParameterError('logitScale', 'a finite number > 0', scale, typeof scale === 'number' ? 'range' : 'type');
    // Uniform(-a, a) entries: a logit is a sum of dim products of variance
    // (a^2 / 3)^2, so a = sqrt(3 * scale / sqrt(dim)) gives it std `scale`.
    const a = Math.sqrt((3 * scale) / Math.sqrt(dim));
    const weights = (matrix: number) => {
      const key = noiseKey(options.seed, matrix);
      const out = new Uint16Array(vocabSize * dim);
      for (let i = 0; i < out.length; i++) out[i] = halfFromNumber(a * (2 * uniform(hash((key + i) >>> 0)) - 1));
      return out;
    };
    return new BigramModel(vocabSize, dim, weights(0), weights(1));
  }

  /** A model over given float16 weights (copied). */
  static fromWeights(options: { vocabSize: number; dim: number; embedding: Uint16Array; head: Uint16Array }): BigramModel {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object { vocabSize, dim, embedding, head }', options, 'type');
    const { vocabSize, dim } = checkShape(options.vocabSize, options.dim);
    for (const name of ['embedding', 'head'] as const) {
      const w = options[name];
      if (!(w instanceof Uint16Array)) throw invalidParameterError(name, 'a Uint16Array of float16 bits', w, 'type');
      if (w.length !== vocabSize * dim)
        throw invalidParameterError(name, `${vocabSize * dim} halves (vocabSize x dim)`, `${w.length} halves`, 'range');
    }
    return new BigramModel(vocabSize, dim, options.embedding.slice(), options.head.slice());
  }

  /** Reads `embedding` and `lm_head`, both F16 [vocabSize, dim], from a safetensors file. */
  static async load(path: string): Promise<BigramModel> {
    if (typeof path !== 'string') throw invalidParameterError('path', 'a file path', path, 'type');
    const bytes = new Uint8Array(await readFile(path));
    try {
      return BigramModel.fromSafetensors(bytes);
    } catch (error) {
      // Every error about the file names it, whatever its class.
      if (error instanceof SafetensorsError) throw new SafetensorsError(`${path}: ${error.message}`);
      if (error instanceof Error) error.message = `${path}: ${error.message}`;
      throw error;
    }
  }

  /** The model in a safetensors file's bytes. */
  static fromSafetensors(bytes: Uint8Array): BigramModel {
    const tensors = parseSafetensors(bytes);
    const read = (name: string) => {
      const t = tensors.get(name);
      if (!t) throw new SafetensorsError(`no tensor '${name}' (a bigram model has '${BIGRAM_TENSORS.embedding}' and '${BIGRAM_TENSORS.head}')`);
      if (t.dtype !== 'F16' || t.shape.length !== 2) {
        throw new SafetensorsError(`tensor '${name}' is ${t.dtype} [${t.shape.join(', ')}]; expected F16 [vocabSize, dim]`);
      }
      return { shape: t.shape, data: new Uint16Array(t.data.slice().buffer) };
    };
    const e = read(BIGRAM_TENSORS.embedding);
    const u = read(BIGRAM_TENSORS.head);
    if (e.shape[0] !== u.shape[0] || e.shape[1] !== u.shape[1]) {
      throw new SafetensorsError(`'${BIGRAM_TENSORS.embedding}' is [${e.shape.join(', ')}] but '${BIGRAM_TENSORS.head}' is [${u.shape.join(', ')}]`);
    }
    return BigramModel.fromWeights({ vocabSize: e.shape[0], dim: e.shape[1], embedding: e.data, head: u.data });
  }

  /** The model as a safetensors file (what load() reads). */
  toSafetensors(): Uint8Array {
    const shape = [this.vocabSize, this.dim];
    return serializeSafetensors({
      [BIGRAM_TENSORS.embedding]: { dtype: 'F16', shape, data: this.embedding },
      [BIGRAM_TENSORS.head]: { dtype: 'F16', shape, data: this.head },
    });
  }

  /**
   * The float16 logits after `token` on the CPU: 'native' (C++), 'js', or
   * 'auto' (native when the addon loaded). Bit for bit what the GPU computes.
   */
  logits(token: number, backend: 'auto' | 'native' | 'js' = 'auto'): Uint16Array {
    if (!isUint32(token))
      throw invalidParameterError('token', 'a token id (an integer from 0 to 4294967295)', token, isInteger(token) ? 'range' : 'type');
    const out = new Uint16Array(this.vocabSize);
    if (backend === 'js') return this.#forwardJs(token, out);
    if (backend !== 'native' && backend !== 'auto') throw invalidParameterError('backend', "'auto', 'native' or 'js'", backend, 'range');
    const addon = loadAddon();
    if (!addon.ok) {
      if (backend === 'native') throw new BackendUnavailableError('native', addon.reason);
      return this.#forwardJs(token, out);
    }
    addon.addon.bigramForward(this.embedding, this.head, this.dim, token, out);
    return out;
  }

  // The same float32 additions, in the same order, as md_lm_head_f16: each
  // product of two halves is exact, and a double sum of two float32 values
  // rounded once to float32 is the float32 sum.
  #forwardJs(token: number, out: Uint16Array): Uint16Array {
    const d = this.dim;
    const value = halfValues();
    const hidden = new Float64Array(d);
    if (token < this.vocabSize) for (let j = 0; j < d; j++) hidden[j] = value[this.embedding[token * d + j]];
    for (let v = 0; v < this.vocabSize; v++) {
      let sum = 0;
      const row = v * d;
      for (let j = 0; j < d; j++) sum = Math.fround(sum + value[this.head[row + j]] * hidden[j]);
      out[v] = halfFromNumber(sum);
    }
    return out;
  }
}

let halfValueTable: Float64Array | undefined;

// The value of every float16 bit pattern, so the forward loop is a lookup.
function halfValues(): Float64Array {
  if (!halfValueTable) {
    halfValueTable = new Float64Array(65536);
    for (let h = 0; h < 65536; h++) halfValueTable[h] = halfToNumber(h);
  }
  return halfValueTable;
}

function checkShape(vocabSize: unknown, dim: unknown): { vocabSize: number; dim: number } {
  return { vocabSize: integerInRange('vocabSize', vocabSize, 1, MAX_VOCAB), dim: integerInRange('dim', dim, 1, MAX_DIM) };
}
