// model.ts: the interface the decode loop drives. Any model that can turn
// tokens into next-token logits implements it; a model whose forward pass is
// a dispatch table also offers a chain, which generates many tokens per
// GPU submission with the sampling on the GPU.
import type { BackendName } from '../backends.js';
import type { BackendChoice, ChainSamplingOptions, ResolvedSampling } from '../sampling-options.js';

/** Tokens a chain generated: what SequenceChain.run() yields. */
export interface ChainChunk {
  /** Position of the first token in `tokens`. */
  position: number;
  /** The tokens the GPU wrote at position .. position + tokens.length - 1. */
  tokens: Uint32Array;
}

/** One row of next-token logits: float32, or float16 bits. */
export type Logits = Float32Array | Uint16Array;

/** Text <-> tokens. Tokens stand for bytes, so a character may span tokens. */
export interface Tokenizer {
  /** The token ids of `text`. */
  encode(text: string): ArrayLike<number>;
  /** encode() without holding the event loop for long text; used for text prompts when present. */
  encodeAsync?(text: string): Promise<ArrayLike<number>>;
  /** The UTF-8 bytes `token` stands for; empty for a control token such as end-of-sequence. */
  tokenBytes(token: number): Uint8Array;
}

/** What generate() and Session need from a model. */
export interface DecodeModel {
  /** Token ids are 0 .. vocabSize - 1; every logits row has vocabSize values. */
  readonly vocabSize: number;
  readonly tokenizer: Tokenizer;
  /** Tokens that end generation (end of sequence / end of turn). */
  readonly eosTokens: readonly number[];
  /** Put before a text prompt given to an empty sequence (the model's BOS, when its tokenizer adds one). */
  readonly bosToken?: number;
  /**
   * Per-sequence state on a backend. 'auto' is the model's choice; a backend
   * named explicitly that cannot run is a BackendUnavailableError, never a
   * fallback.
   */
  openSequence(options: { backend: BackendChoice; contextSize: number }): ModelSequence;
  /**
   * contextSize 'auto': the size to use and why (a GGUF model's trained
   * context, or what fits in free memory). Without it, 'auto' is 4096.
   */
  autoContextSize?(): { contextSize: number; reason: string };
}

/** One sequence's state: the tokens the model has seen, on one backend. */
export interface ModelSequence {
  /** Where the forward pass and the sampler run. */
  readonly backend: BackendName;
  readonly contextSize: number;
  /**
   * Evaluates `tokens` at positions position .. position + tokens.length - 1
   * and returns the logits for the next position. `position` may be lower
   * than before: the model then forgets positions >= position first (the
   * loop rewinds after a stop).
   */
  evaluate(tokens: Uint32Array, position: number): Promise<Logits>;
  /**
   * As evaluate(), returning the logits after each of the last `rows`
   * tokens (1 <= rows <= tokens.length), each what evaluating up to its
   * token alone gives, in one forward pass: what speculative verification
   * reads. Without it, verification evaluates token by token.
   */
  evaluateRows?(tokens: Uint32Array, position: number, rows: number): Promise<Logits[]>;
  /**
   * FlashSampling: as evaluate(), then the token at the next position as
   * the sequence's sampler draws it from those logits with `sampling`
   * (position and window set), without the logits coming back; NO_TOKEN
   * (0xFFFFFFFF) when every logit is -Infinity. Only for options
   * fusedHeadSamples() accepts. Without it, the loop samples the logits.
   */
  evaluateAndPick?(tokens: Uint32Array, position: number, sampling: ResolvedSampling): Promise<number>;
  /**
   * Context shift: the sequence has evaluated positions 0 .. evaluated - 1;
   * it forgets keep .. keep + discard - 1 and holds the later ones at
   * positions keep.. as if evaluated there (llama.cpp's shift: the keys
   * rotated, nothing evaluated again). keep + discard <= evaluated.
   * Without it, a shift evaluates the moved tokens again.
   */
  shift?(keep: number, discard: number, evaluated: number): Promise<void>;
  /** Present when the model's forward pass runs as chained dispatch tables. */
  readonly chain?: SequenceChain;
  dispose(): void;
}

/** Chained decoding: many tokens per submission, sampled on the GPU. */
export interface SequenceChain {
  /**
   * Makes `tokens` the sequence's positions position.. (forgetting any
   * after them). The chain evaluates the last token itself when it
   * generates the next one.
   */
  prefill(tokens: Uint32Array, position: number): Promise<void>;
  /**
   * Generates up to `count` tokens after position `start`, `chunkSize` per
   * submission, yielding each chunk. Breaking out waits for the GPU. Throws
   * NoTokenError (after the tokens before it) at an all -Infinity step.
   */
  run(sampling: ChainSamplingOptions, start: number, count: number, chunkSize: number): AsyncIterable<ChainChunk>;
  /**
   * Speculative verification on the GPU, with the sampling of run(): one
   * submission per draft, only token ids back.
   */
  openVerifier?(sampling: ChainSamplingOptions): DraftVerifier;
  /**
   * Constrained decoding on the GPU, with the sampling of run(): each token
   * sampled on the GPU under a mask the CPU uploads, only its id back.
   */
  openMaskedSteps?(sampling: ChainSamplingOptions): MaskedSteps;
}

/** One constrained token per step; dispose() waits for the GPU and frees the tables. */
export interface MaskedSteps {
  /**
   * Evaluates `token` at `position` and picks the token after it as run()
   * would, among the tokens the mask allows: the forward pass is submitted
   * first, then maskFor() is called (its work overlaps the GPU's) and the
   * pick submitted with its mask. The picked token is then in the
   * sequence at position + 1. Resolves with it, -1 when the mask allowed
   * no token with a logit above -Infinity, or null (nothing picked) when
   * maskFor() resolves null.
   */
  step(token: number, position: number, maskFor: () => Promise<Uint32Array | null>): Promise<number | null>;
  dispose(): Promise<void>;
}

/** Verifies drafts with the sampling it was opened with; dispose() frees its tables. */
export interface DraftVerifier {
  /** The most tokens one verify() takes: the pending token and up to maxTokens - 1 drafts. */
  readonly maxTokens: number;
  /**
   * Evaluates `tokens` at positions position.. (the sequence's last token,
   * not yet evaluated, then a draft; positions before it evaluated) and
   * returns, for each, the token run() would generate after it, given the
   * tokens before it: tokens.length ids, -1 where every logit was
   * -Infinity. Positions after the accepted ones are forgotten by the next
   * call (or prefill) from an earlier position.
   */
  verify(tokens: Uint32Array, position: number): Promise<Int32Array>;
  /**
   * Rejection sampling's half on the GPU, where the sequence has it: what
   * verify() returns, and for each draft token (tokens[1..]) the
   * probability the sampler gives it at its row; a row's logits are read
   * only when asked (a rejected draft's residual is drawn on the CPU).
   */
  readonly gather?: (tokens: Uint32Array, position: number) => Promise<DraftGather>;
  dispose(): void;
}

export interface DraftGather {
  /** verify()'s ids: each row's sampled token. */
  picked: Int32Array;
  /** probabilities[r]: the sampler's probability of tokens[r + 1] at row r. */
  probabilities: Float32Array;
  /** Row r's logits, as the sampler read them. */
  row(r: number): Logits;
}
