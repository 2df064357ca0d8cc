// request-queue.ts: the model's requests, run `parallel` at a time in the
// order they came; at most `maxQueue` wait. A request past that is
// refused at once (429) rather than left to wait without end; a waiting
// request whose client leaves is dropped from the queue.
import { HttpError } from './http-error.js';

interface Waiting {
  start: () => void;
  signal: AbortSignal;
}

export class RequestQueue {
  #running = 0;
  readonly #waiting: Waiting[] = [];

  constructor(
    readonly parallel: number,
    readonly maxQueue: number,
  ) {}

  /** Requests running and waiting now. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }

  /** Runs `task` when a slot is free; rejects with a 429 when the queue is full, or with the signal's reason. */
  async run<T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.parallel) {
      if (this.#waiting.length >= this.maxQueue) {
        throw new HttpError(
          429,
          `the server is busy: ${this.#running} request(s) running and ${this.#waiting.length} waiting (maxQueue ${this.maxQueue}); try again later`,
          'rate_limit_error',
          null,
          'queue_full',
        );
      }
      await new Promise<void>((resolve, reject) => {
        const entry: Waiting = { start: resolve, signal };
        const leave = () => {
          const at = this.#waiting.indexOf(entry);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal.reason);
        };
        entry.start = () => {
          signal.removeEventListener('abort', leave);
          resolve();
        };
        signal.addEventListener('abort', leave, { once: true });
        this.#waiting.push(entry);
      });
    }
    this.#running++;
    try {
      return await task();
    } finally {
      this.#running--;
      this.#waiting.shift()?.start();
    }
  }
}
