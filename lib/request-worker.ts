// request-worker.ts: a worker thread that answers requests, for work that
// must not hold the main thread's event loop (reading a GGUF header,
// building and running a tokenizer). Started on the first request, it
// keeps the process open only while a request is pending. A worker that
// dies fails the requests in flight with its error; the next request
// starts a new one. The worker side is serveRequests().
//
// requestSync() blocks the calling thread until the worker answers (for a
// synchronous API over the worker's state, as the tokenizer's encode()):
// the request goes over a port of its own, and the caller sleeps in
// Atomics.wait until the worker flags the answer.
import { MessageChannel, parentPort, receiveMessageOnPort, Worker, type MessagePort, type ResourceLimits } from 'node:worker_threads';

import { AbortError } from './errors.js';
import { workerScript } from './worker-script.js';

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** Bounds of one request: past them the thread is ended (the only way to stop it) and the request rejects. */
export interface RequestLimits {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** The error for a request that ran out of time. */
  timeoutError?: () => Error;
}

/** An error crossing from the worker: its class name and fields, to be rebuilt on this side. */
export interface WorkerError {
  name: string;
  message: string;
  fields?: Record<string, string>;
}

export class RequestWorker {
  readonly #script: string;
  readonly #workerData: unknown;
  readonly #rebuild: (error: WorkerError) => Error;
  readonly #resourceLimits: ResourceLimits | undefined;
  readonly #endWhenIdle: boolean;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #disposed = false;
  // requestSync's port to the current worker, and the flag the worker raises when it has answered.
  #sync: { port: MessagePort; flag: Int32Array } | undefined;

  /**
   * `script`: the compiled worker's path from lib/; `rebuild`: the error to
   * throw for one the worker reports; `resourceLimits`: the thread's heap,
   * for code from a file (a thread past it ends, the process carries on);
   * `endWhenIdle`: the thread ends once no request is pending, handing its
   * heap back (a thread that keeps no state between requests).
   */
  constructor(
    script: string,
    workerData: unknown,
    rebuild: (error: WorkerError) => Error = (e) => new Error(e.message),
    resourceLimits?: ResourceLimits,
    endWhenIdle = false,
  ) {
    this.#script = script;
    this.#workerData = workerData;
    this.#rebuild = rebuild;
    this.#resourceLimits = resourceLimits;
    this.#endWhenIdle = endWhenIdle;
  }

  /** Whether a thread is up (it starts on a request; endWhenIdle ends it after the last answer). */
  get threadRunning(): boolean {
    return this.#worker !== undefined;
  }

  request<T>(message: unknown, transfer: ArrayBuffer[] = [], limits: RequestLimits = {}): Promise<T> {
    if (this.#disposed) return Promise.reject(new Error('The worker thread was ended (its model was disposed)'));
    const { signal, timeoutMs } = limits;
    if (signal?.aborted) return Promise.reject(new AbortError(signal.reason, 'The request was aborted'));
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => this.#end(id, new AbortError(signal?.reason, 'The request was aborted'));
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.#pending.set(id, {
        resolve: (value) => {
          done();
          resolve(value as T);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => this.#end(id, limits.timeoutError?.() ?? new Error(`A worker thread (${this.#script}) took over ${timeoutMs} ms`)),
          timeoutMs,
        );
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.ref();
      try {
        worker.postMessage({ id, message }, transfer);
      } catch (error) {
        this.#pending.delete(id);
        done();
        reject(error as Error);
      }
    });
  }

  /**
   * request(), answered before it returns: the calling thread sleeps until
   * the worker answers (at most `timeoutMs`; past it the thread is ended
   * and this throws).
   */
  requestSync<T>(message: unknown, timeoutMs = 60_000): T {
    if (this.#disposed) throw new Error('The worker thread was ended (its model was disposed)');
    const worker = this.#start();
    if (this.#sync === undefined) {
      const { port1, port2 } = new MessageChannel();
      const flag = new Int32Array(new SharedArrayBuffer(4));
      worker.postMessage({ sync: { port: port2, flag } }, [port2]);
      port1.unref();
      this.#sync = { port: port1, flag };
    }
    const { port, flag } = this.#sync;
    Atomics.store(flag, 0, 0);
    port.postMessage({ message });
    if (Atomics.wait(flag, 0, 0, timeoutMs) === 'timed-out') {
      this.#sync = undefined;
      this.#worker = undefined;
      this.#fail(new Error(`A worker thread (${this.#script}) was ended: a synchronous request on it ran out of time`));
      void worker.terminate();
      throw new Error(`A worker thread (${this.#script}) did not answer a synchronous request in ${timeoutMs} ms`);
    }
    const answer = receiveMessageOnPort(port)?.message as { value?: unknown; error?: WorkerError } | undefined;
    if (answer === undefined) throw new Error(`A worker thread (${this.#script}) flagged an answer it did not send`);
    if (answer.error !== undefined) throw this.#rebuild(answer.error);
    return answer.value as T;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#fail(new Error('The worker thread was ended (its model was disposed) before it answered'));
    void this.#worker?.terminate();
    this.#worker = undefined;
    this.#sync = undefined;
  }

  // Ends the thread for request `id` (out of time, or aborted): it rejects
  // with `error`, any other request in flight with an error that says why;
  // the next request starts a new thread.
  #end(id: number, error: Error): void {
    const worker = this.#worker;
    const pending = this.#pending.get(id);
    if (worker === undefined || pending === undefined) return;
    this.#pending.delete(id);
    this.#worker = undefined;
    this.#sync = undefined;
    this.#fail(new Error(`A worker thread (${this.#script}) was ended: another request on it ran out of time or was aborted`));
    pending.reject(error);
    void worker.terminate();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerScript(this.#script), { workerData: this.#workerData, resourceLimits: this.#resourceLimits });
    worker.on('message', ({ id, value, error }: { id: number; value?: unknown; error?: WorkerError }) => {
      const pending = this.#pending.get(id);
      this.#pending.delete(id);
      if (this.#pending.size === 0) {
        worker.unref();
        if (this.#endWhenIdle && this.#sync === undefined && this.#worker === worker) {
          this.#worker = undefined;
          void worker.terminate();
        }
      }
      if (error !== undefined) pending?.reject(this.#rebuild(error));
      else pending?.resolve(value);
    });
    // Only the current thread's end fails the requests in flight: those of
    // a thread ended on purpose (#end, dispose) were settled then.
    const lost = (error: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#sync = undefined;
      this.#fail(error);
    };
    worker.on('error', (error) => lost(new Error(`A worker thread (${this.#script}) failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => lost(new Error(`A worker thread (${this.#script}) exited (code ${code})`)));
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #fail(error: Error): void {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}

/** The worker side: answers each request with `handle`'s value (transferring `transfer(value)`) or its error. */
export function serveRequests<T>(handle: (message: T) => Promise<unknown> | unknown, transfer: (value: unknown) => ArrayBuffer[] = () => []): void {
  const answer = async (message: T, send: (reply: { value?: unknown; error?: WorkerError }, transfer?: ArrayBuffer[]) => void) => {
    try {
      const value = await handle(message);
      send({ value }, transfer(value));
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      const fields = Object.fromEntries(Object.entries(e).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
      send({ error: { name: e.name, message: e.message, fields } satisfies WorkerError });
    }
  };
  parentPort!.on('message', (data: { id: number; message: T } | { sync: { port: MessagePort; flag: Int32Array } }) => {
    if ('sync' in data) {
      // requestSync's port: each answer is posted, then flagged, and the caller woken.
      const { port, flag } = data.sync;
      port.on('message', ({ message }: { message: T }) =>
        answer(message, (reply, list) => {
          port.postMessage(reply, list);
          Atomics.store(flag, 0, 1);
          Atomics.notify(flag, 0);
        }),
      );
      return;
    }
    void answer(data.message, (reply, list) => parentPort!.postMessage({ id: data.id, ...reply }, list));
  });
}
