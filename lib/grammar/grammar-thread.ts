// grammar-thread.ts: one compiled grammar on its own thread
// (grammar-worker.ts), and the matchers generations walk it with.
//
// Why a thread per grammar, not one for all: the engine cannot move a
// compiled grammar between instances (it has no serialization), so the
// matchers must live where the grammar was compiled; and a compile can run
// for seconds, which the only way to stop is ending its thread. With one
// thread per grammar, a slow compile delays no other generation's masks,
// and ending it loses nothing but itself. The price is the vocabulary read
// once per grammar (about 0.4 s for 150,000 tokens, on that thread).
import { RequestWorker, type WorkerError } from '../request-worker.js';
import { GrammarError } from './grammar-error.js';
import type { GrammarRequest, GrammarThreadData, MatcherState } from './grammar-protocol.js';

function rebuild(error: WorkerError): Error {
  if (error.name === 'GrammarError' && error.fields?.what !== undefined) return new GrammarError(error.fields.what, error.fields.reason ?? '');
  return new Error(error.message);
}

function emitWarnings(warnings: readonly string[] | undefined): void {
  for (const w of warnings ?? []) process.emitWarning(`grammar engine: ${w}`, { code: 'MD_GRAMMAR_WARNING' });
}

export class GrammarThread {
  readonly #worker: RequestWorker;
  #ended = false;
  #nextMatcher = 0;
  #openMatchers = 0;
  /** When a matcher was last opened on it (the order idle threads are ended in). */
  lastUsed = performance.now();

  constructor(data: GrammarThreadData) {
    this.#worker = new RequestWorker('grammar/grammar-worker.js', data, rebuild);
  }

  /** Ended: disposed, failed, or its engine refused something. A Grammar on it compiles again on a new thread. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Whether a generation is walking the grammar now. */
  get busy(): boolean {
    return this.#openMatchers > 0;
  }

  /** Compiles the grammar; aborting `signal` ends the thread (the only way to stop a compile). */
  async compile(signal: AbortSignal): Promise<void> {
    await this.#request<{ warnings: string[] }>({ op: 'compile' }, signal);
  }

  /** A matcher at the start of the grammar. */
  async openMatcher(): Promise<GrammarMatcherHandle> {
    const id = this.#nextMatcher++;
    this.#openMatchers++;
    this.lastUsed = performance.now();
    try {
      const state = await this.#request<MatcherState>({ op: 'open', id });
      return new GrammarMatcherHandle(this, id, state);
    } catch (error) {
      this.#openMatchers--;
      throw error;
    }
  }

  dispose(): void {
    this.#ended = true;
    this.#worker.dispose();
  }

  /** @internal A request of a matcher or of the compile; any failure ends the thread. */
  async request<T extends { warnings?: string[] }>(request: GrammarRequest): Promise<T> {
    return this.#request<T>(request);
  }

  /** @internal */
  matcherClosed(id: number): void {
    this.#openMatchers--;
    if (!this.#ended) this.#request({ op: 'close', id }).catch(() => {});
  }

  async #request<T extends { warnings?: string[] }>(request: GrammarRequest, signal?: AbortSignal): Promise<T> {
    if (this.#ended) throw new Error("The grammar's thread was ended (its model was disposed, or the engine failed); compile the grammar again");
    try {
      const reply = await this.#worker.request<T>(request, [], { signal });
      emitWarnings(reply.warnings);
      return reply;
    } catch (error) {
      // A refusal leaves the engine instance unusable (xgrammar.ts); an
      // abort or a lost thread leaves nothing to talk to.
      this.dispose();
      throw error;
    }
  }
}

/** One generation's position in the grammar, on the grammar's thread. */
export class GrammarMatcherHandle {
  readonly #thread: GrammarThread;
  readonly #id: number;
  #terminated: boolean;
  // The next mask, sent ahead with the last change of state; undefined once used.
  #mask: Uint32Array | null | undefined;
  #closed = false;

  constructor(thread: GrammarThread, id: number, opened: MatcherState) {
    this.#thread = thread;
    this.#id = id;
    this.#terminated = opened.terminated;
    this.#mask = opened.mask;
  }

  /** An end token was accepted where the grammar may end. */
  get terminated(): boolean {
    return this.#terminated;
  }

  /** The tokens allowed next; null once terminated. */
  async nextMask(): Promise<Uint32Array | null> {
    const ahead = this.#mask;
    this.#mask = undefined;
    if (ahead !== undefined) return ahead;
    this.#update(await this.#thread.request<MatcherState>({ op: 'next', id: this.#id }));
    const mask = this.#mask ?? null;
    this.#mask = undefined;
    return mask;
  }

  /** Moves past `token`; false, changing nothing, when the grammar does not allow it here. */
  async accept(token: number): Promise<boolean> {
    const state = await this.#thread.request<MatcherState>({ op: 'accept', id: this.#id, token });
    if (state.accepted) this.#update(state);
    return state.accepted === true;
  }

  async rollBack(count: number): Promise<void> {
    if (count <= 0) return;
    this.#update(await this.#thread.request<MatcherState>({ op: 'rollBack', id: this.#id, count }));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#thread.matcherClosed(this.#id);
  }

  #update(state: MatcherState): void {
    this.#terminated = state.terminated;
    this.#mask = state.mask;
  }
}
