// bigram-weights.ts: what the bigram model's sequences and GPU chain read
// of it, as an interface of its own, so they need not import the model
// (which opens them).

export interface BigramWeights {
  readonly vocabSize: number;
  readonly dim: number;
  /** E: vocabSize x dim float16 bits, row-major. */
  readonly embedding: Uint16Array;
  /** U: vocabSize x dim float16 bits, row-major. */
  readonly head: Uint16Array;
  /** The float16 logits after `token`, computed on the CPU. */
  logits(token: number, backend: 'native' | 'js'): Uint16Array;
}
