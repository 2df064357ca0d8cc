// encoder-thread.ts: a vocabulary's encoder on a worker thread
// (encoder-worker.ts), so neither building it (a map of 150,000 token
// texts) nor encoding long prompts holds the event loop.
import { RequestWorker } from '../request-worker.js';
import type { EncodeRequest } from './encoder.js';
import type { GgufVocabulary } from './gguf-vocabulary.js';
import { packedFormOf, unpackStrings, type PackedStrings } from './packed-strings.js';

/** A vocabulary as workerData: its tokens in the packed form they came in, when they did. */
export type VocabularyForThread = Omit<GgufVocabulary, 'tokens'> & { tokens: readonly string[] | PackedStrings };

function forThread(vocabulary: GgufVocabulary): VocabularyForThread {
  return { ...vocabulary, tokens: packedFormOf(vocabulary.tokens) ?? vocabulary.tokens };
}

/** The worker side: the vocabulary with its tokens unpacked. */
export function vocabularyOnThread(data: VocabularyForThread): GgufVocabulary {
  return { ...data, tokens: Array.isArray(data.tokens) ? data.tokens : unpackStrings(data.tokens as PackedStrings) };
}

export class EncoderThread {
  readonly #worker: RequestWorker;

  constructor(vocabulary: GgufVocabulary) {
    // A small young generation: the thread's live data (token texts, their
    // map) is made once and stays, and the default's 32 MiB of semispaces
    // stayed resident beside it.
    this.#worker = new RequestWorker('tokenizers/encoder-worker.js', forThread(vocabulary), undefined, { maxYoungGenerationSizeMb: 4 });
  }

  /** Builds the encoders in the worker ahead of the first request. */
  async prepare(): Promise<void> {
    await this.#worker.request({ prepare: true });
  }

  encode(request: EncodeRequest): Promise<Uint32Array> {
    return this.#worker.request<Uint32Array>({ request });
  }

  /** encode(), answered before it returns (the calling thread waits for the worker's encoder). */
  encodeSync(request: EncodeRequest): Uint32Array {
    return this.#worker.requestSync<Uint32Array>({ request });
  }

  dispose(): void {
    this.#worker.dispose();
  }
}
