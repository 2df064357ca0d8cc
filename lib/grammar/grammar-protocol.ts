// grammar-protocol.ts: what crosses between a grammar's thread
// (grammar-worker.ts) and the main thread (grammar-thread.ts).
import type { GrammarSpec } from './grammar-spec.js';

/** A vocabulary's token bytes, packed: token t is bytes[offsets[t] .. offsets[t + 1]). Shared, never copied. */
export interface PackedVocabulary {
  bytes: SharedArrayBuffer;
  /** Uint32 offsets, vocabSize + 1 of them. */
  offsets: SharedArrayBuffer;
}

/** workerData of a grammar thread: the vocabulary it compiles against and its one grammar. */
export interface GrammarThreadData {
  vocabulary: PackedVocabulary;
  vocabSize: number;
  /** The model's end-of-generation tokens, allowed where the grammar may end. */
  stops: readonly number[];
  spec: GrammarSpec;
}

export type GrammarRequest =
  | { op: 'compile' }
  | { op: 'open'; id: number }
  | { op: 'next'; id: number }
  | { op: 'accept'; id: number; token: number }
  | { op: 'rollBack'; id: number; count: number }
  | { op: 'close'; id: number };

/** A matcher's reply: its state after the request, and the engine's warnings since the last reply. */
export interface MatcherState {
  terminated: boolean;
  warnings: string[];
  /**
   * The tokens allowed next as a bitmask, or null once the matcher has
   * terminated: the answer to 'next', and sent ahead with every change of
   * state ('open', an accepted token, 'rollBack').
   */
  mask?: Uint32Array | null;
  /** 'accept': whether the token was allowed (nothing changed when not). */
  accepted?: boolean;
}
