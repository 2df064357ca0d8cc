// encoder-thread.ts: a vocabulary's encoder on a worker thread
// (encoder-worker.ts), so neither building it (a few hundred milliseconds
// for 150,000 tokens) nor encoding long prompts holds the event loop.
import { RequestWorker } from '../request-worker.js';
import type { EncodeRequest } from './encoder.js';
import type { GgufVocabulary } from './gguf-vocabulary.js';

export class EncoderThread {
  readonly #worker: RequestWorker;

  constructor(vocabulary: GgufVocabulary) {
    this.#worker = new RequestWorker('tokenizers/encoder-worker.js', vocabulary);
  }

  /** Builds the encoders in the worker ahead of the first request. */
  async prepare(): Promise<void> {
    await this.#worker.request({ prepare: true });
  }

  encode(request: EncodeRequest): Promise<Uint32Array> {
    return this.#worker.request<Uint32Array>({ request });
  }

  dispose(): void {
    this.#worker.dispose();
  }
}
