// event-loop.ts: how the decode loop shares the thread it runs on.
//
// On the CPU backends the forward pass and the sampler run on the
// JavaScript thread, and every await in the loop resolves as a microtask:
// without a deliberate turn, timers, I/O and abort signals would wait for
// the whole generation. The GPU paths turn it anyway (their results come
// back as events).

/** The longest the loop computes before letting the event loop turn. */
export const TURN_EVERY_MS = 1;

/** One turn of the event loop (timers, I/O), between pieces of work that each take a while. */
export function turn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/** Gives the event loop a turn (timers, I/O) when TURN_EVERY_MS have passed since the last one. */
export class EventLoopTurns {
  #last = performance.now();

  async maybeTurn(): Promise<void> {
    if (performance.now() - this.#last < TURN_EVERY_MS) return;
    await turn();
    this.#last = performance.now();
  }
}

/** What unlessAborted() returns when the signal won. */
export const ABORTED: unique symbol = Symbol('aborted');

/**
 * `promise`'s value, or ABORTED as soon as `signal` aborts, whichever comes
 * first: a model whose promise never settles cannot hold an abort up. The
 * promise is then left to settle unobserved (a rejection is swallowed).
 */
export function unlessAborted<T>(promise: Promise<T> | T, signal: AbortSignal | undefined): Promise<T | typeof ABORTED> {
  const result = Promise.resolve(promise);
  if (!signal) return result;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      result.catch(() => undefined); // nobody waits for it any more
      resolve(ABORTED);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    result.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
