// embedding-context.ts: a GGUF model's embeddings of texts, as
// node-llama-cpp's LlamaEmbeddingContext gives them: each text tokenized
// (BOS and EOS added as the file says), evaluated from an empty sequence,
// and its hidden states after the output norm pooled as the file declares
// (<arch>.pooling_type): the last token's ('none', llama.cpp's default for
// decoder models, and 'last'), their mean ('mean'), or the first token's
// ('cls'). The vectors are not normalized, as node-llama-cpp returns them.
import { invalidParameterError } from '../errors.js';

/** One text's embedding: node-llama-cpp's LlamaEmbedding. */
export class Embedding {
  constructor(readonly vector: readonly number[]) {}

  /** The cosine of the angle between this vector and `other`'s (1: the same direction). */
  calculateCosineSimilarity(other: Embedding | readonly number[]): number {
    const b = other instanceof Embedding ? other.vector : other;
    if (b.length !== this.vector.length)
      throw invalidParameterError('other', `an embedding of ${this.vector.length} values`, `${b.length} values`, 'range');
    let dot = 0,
      na = 0,
      nb = 0;
    for (let i = 0; i < b.length; i++) {
      dot += this.vector[i] * b[i];
      na += this.vector[i] * this.vector[i];
      nb += b[i] * b[i];
    }
    return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
  }

  toJSON(): { type: 'embedding'; vector: readonly number[] } {
    return { type: 'embedding', vector: this.vector };
  }
}

export type EmbeddingPooling = 'none' | 'mean' | 'cls' | 'last';

/** Where the hidden states come from: a CPU sequence, or a GPU forward table. */
export interface EmbeddingSequence {
  /** `tokens` from position 0; the last `rows` hidden states after the output norm (1, or every token). */
  embed(tokens: Uint32Array, rows: number): Promise<Float32Array>;
  dispose(): void;
}

/** What an embedding context needs of its model. */
export interface EmbeddingSource {
  readonly contextSize: number;
  readonly pooling: EmbeddingPooling;
  readonly embeddingLength: number;
  /** Where the forward pass runs. */
  readonly backend: 'native' | 'metal' | 'emulated';
  tokens(text: string): Promise<number[]>;
  readonly sequence: EmbeddingSequence;
}

export class EmbeddingContext {
  readonly #source: EmbeddingSource;
  #queue: Promise<unknown> = Promise.resolve(); // one text at a time on the sequence
  #disposed = false;

  /** @internal GgufModel.createEmbeddingContext() makes them. */
  constructor(source: EmbeddingSource) {
    this.#source = source;
  }

  get pooling(): EmbeddingPooling {
    return this.#source.pooling;
  }

  /** Where the forward pass runs. */
  get backend(): 'native' | 'metal' | 'emulated' {
    return this.#source.backend;
  }

  /** The embedding of `input`: a text, or token ids used as given. */
  getEmbeddingFor(input: string | readonly number[]): Promise<Embedding> {
    const run = this.#queue.then(() => this.#embed(input));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** The embeddings of many texts, in order (one forward pass each, on this context's sequence). */
  async getEmbeddingsFor(inputs: readonly (string | readonly number[])[]): Promise<Embedding[]> {
    if (!Array.isArray(inputs)) throw invalidParameterError('inputs', 'an array of texts', inputs, 'type');
    return Promise.all(inputs.map((input) => this.getEmbeddingFor(input)));
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.#queue;
    this.#source.sequence.dispose();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }

  async #embed(input: string | readonly number[]): Promise<Embedding> {
    if (this.#disposed) throw new Error('getEmbeddingFor: the embedding context was disposed');
    const source = this.#source;
    let tokens: number[];
    if (typeof input === 'string') tokens = await source.tokens(input);
    else if (Array.isArray(input)) tokens = [...input];
    else throw invalidParameterError('input', 'a text or an array of token ids', input, 'type');
    if (tokens.length === 0) return new Embedding([]);
    if (tokens.length >= source.contextSize) {
      throw invalidParameterError(
        'input',
        `at most ${source.contextSize - 1} tokens (the embedding context's contextSize is ${source.contextSize})`,
        `${tokens.length} tokens`,
        'range',
      );
    }
    const all = source.pooling === 'mean' || source.pooling === 'cls';
    const rows = await source.sequence.embed(Uint32Array.from(tokens), all ? tokens.length : 1);
    const d = source.embeddingLength;
    if (source.pooling === 'cls') return new Embedding(Array.from(rows.subarray(0, d)));
    if (source.pooling !== 'mean') return new Embedding(Array.from(rows.subarray(rows.length - d)));
    const mean = new Float64Array(d);
    for (let r = 0; r < tokens.length; r++) for (let i = 0; i < d; i++) mean[i] += rows[r * d + i];
    return new Embedding(Array.from(mean, (x) => Math.fround(x / tokens.length)));
  }
}
