// generation.ts: what generate() returns. Both an async iterable of tokens
// and a promise-like of the result, started by whichever comes first:
//   for await (const { token, text } of generation) ...  // then: await generation
//   const result = await generation;                     // callbacks only
// Nothing runs until then, so an unused Generation holds nothing.
import type { GenerationResult } from './decode-loop.js';
import type { GeneratedToken } from './generate-options.js';

/** Starts the run: called once, by the first iteration or await. */
export type StartRun = () => { tokens: AsyncGenerator<GeneratedToken, GenerationResult, undefined>; result: () => GenerationResult | undefined };

export class Generation implements AsyncIterable<GeneratedToken>, PromiseLike<GenerationResult> {
  readonly [Symbol.toStringTag] = 'Generation';

  readonly #start: StartRun;
  #mode: 'iterate' | 'await' | undefined;
  #result: Promise<GenerationResult> | undefined;
  #settle: { resolve: (r: GenerationResult) => void; reject: (e: unknown) => void } | undefined;

  /** @internal */
  constructor(start: StartRun) {
    this.#start = start;
  }

  /**
   * The result: when iterating, it settles as the loop ends (a loop that
   * breaks early gives stopReason 'callback'); otherwise it runs the
   * generation to the end, with the callbacks as the only stream.
   */
  get result(): Promise<GenerationResult> {
    if (this.#result) return this.#result;
    this.#mode = 'await';
    return (this.#result = this.#drain());
  }

  then<A = GenerationResult, B = never>(
    onFulfilled?: ((value: GenerationResult) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.result.then(onFulfilled, onRejected);
  }

  /** As Promise.prototype.catch, on the result. */
  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<GenerationResult | B> {
    return this.result.catch(onRejected);
  }

  /** As Promise.prototype.finally, on the result. */
  finally(onFinally?: (() => void) | null): Promise<GenerationResult> {
    return this.result.finally(onFinally);
  }

  [Symbol.asyncIterator](): AsyncIterator<GeneratedToken, undefined> {
    if (this.#mode) {
      throw new TypeError(
        this.#mode === 'iterate'
          ? 'This generation is already being iterated; iterate a generation once'
          : 'This generation is already running because it was awaited; to stream it, iterate it before awaiting it',
      );
    }
    this.#mode = 'iterate';
    this.#result = new Promise<GenerationResult>((resolve, reject) => (this.#settle = { resolve, reject }));
    this.#result.catch(() => {}); // the error reaches the loop; awaiting the result as well is optional
    const { tokens, result } = this.#start();
    const settle = this.#settle!;
    const ended = (): IteratorReturnResult<undefined> => {
      const final = result();
      if (final) settle.resolve(final);
      else settle.reject(new Error('The generation was stopped before it started: there is no result'));
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        try {
          const step = await tokens.next();
          return step.done ? ended() : step;
        } catch (error) {
          settle.reject(error);
          throw error;
        }
      },
      return: async () => {
        try {
          await tokens.return(undefined as never);
          return ended();
        } catch (error) {
          settle.reject(error);
          throw error;
        }
      },
    };
  }

  async #drain(): Promise<GenerationResult> {
    const { tokens } = this.#start();
    for (;;) {
      const step = await tokens.next();
      if (step.done) return step.value;
    }
  }
}
