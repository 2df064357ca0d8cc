// openai-server.ts: createServer(model, options): OpenAI's HTTP API over
// one loaded model (llama-server's endpoints, in Node): chat completions,
// completions, embeddings, models, and /health. Up to `parallel` requests
// run at once, each on a slot of its own (a chat session, a KV cache of
// the context over the slots), their decode steps sharing forward passes
// (the model's batcher); the rest wait in order in a bounded queue
// (request-queue.ts); a client that disconnects stops its request.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';

import type { ChatSession, ChatModel } from '../chat/chat-session.js';
import type { EmbeddingContext } from '../models/embedding-context.js';
import type { Tokenizer } from '../generate/model.js';
import { chatCompletions } from './chat-completions.js';
import { completions } from './completions.js';
import { embeddings } from './embeddings.js';
import { HttpError, sendError } from './http-error.js';
import { sendJson } from './reply-end.js';
import { createdNow } from './reply-ids.js';
import { readJsonBody } from './request-body.js';
import { RequestQueue } from './request-queue.js';
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from './server-options.js';
import { ServerSlots } from './slots.js';

export type { ServerOptions } from './server-options.js';

/** The smallest context a slot may have. */
const MIN_SLOT_CONTEXT = 16;

/**
 * What the server serves: a chat model (a GgufModel is one), with its
 * automatic context size and its embeddings where it has them.
 */
export interface ServedModel extends ChatModel {
  createEmbeddingContext?(): EmbeddingContext;
  /** Throws when `count` sequences of `contextSize` positions cannot open (memory, maxSequences): the slots, checked up front. */
  checkSequencesFit?(count: number, contextSize: number): void;
}

type Route = (body: Record<string, unknown>, res: ServerResponse, signal: AbortSignal) => Promise<void>;

export class OpenAiServer {
  readonly model: ServedModel;
  readonly options: ResolvedServerOptions;
  readonly modelName: string;
  readonly #http: Server;
  readonly #queue: RequestQueue;
  readonly #running = new Set<AbortController>();
  // `parallel` slots, each a sequence of its own (made at its first request).
  readonly #slots: ServerSlots;
  // Each slot's context: the total (given, or the model's auto choice) over the slots.
  readonly slotContextSize: number;
  #embeddings: EmbeddingContext | undefined;
  #closed = false;
  readonly #stats = { requests: 0, cancelled: 0, completionTokens: 0 };
  #countTokens = (tokens: number): void => void (this.#stats.completionTokens += tokens);

  constructor(model: ServedModel, options?: ServerOptions) {
    this.model = model;
    this.options = resolveServerOptions(options);
    this.modelName = this.options.modelName ?? basename(model.info?.path ?? 'model').replace(/\.gguf$/i, '');
    const total = typeof this.options.contextSize === 'number' ? this.options.contextSize : autoContextSize(model);
    this.slotContextSize = Math.floor(total / this.options.parallel);
    if (this.slotContextSize < MIN_SLOT_CONTEXT) {
      throw new RangeError(
        `Expected a contextSize of at least ${MIN_SLOT_CONTEXT} per slot for contextSize ${total} over parallel ${this.options.parallel}: give a larger contextSize or a smaller parallel`,
      );
    }
    // Every slot's KV cache, checked now: a slot opens its sequence at its first request, and that must not fail for memory.
    try {
      model.checkSequencesFit?.(this.options.parallel, this.slotContextSize);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw new RangeError(
        `parallel ${this.options.parallel} slots of ${this.slotContextSize} positions (contextSize ${total}) cannot open: ${error.message}`,
      );
    }
    this.#slots = new ServerSlots(model, this.options.parallel, this.options.backend, this.slotContextSize);
    this.#queue = new RequestQueue(this.options.parallel, this.options.maxQueue);
    this.#http = createHttpServer((req, res) => void this.#handle(req, res));
  }

  /** Starts listening; resolves when it does, with the address (port 0: the one picked). */
  async listen(): Promise<{ host: string; port: number; url: string }> {
    await new Promise<void>((resolve, reject) => {
      this.#http.once('error', reject);
      this.#http.listen(this.options.port, this.options.host, () => {
        this.#http.off('error', reject);
        resolve();
      });
    });
    return { host: this.options.host, port: this.port, url: this.url };
  }

  get port(): number {
    return (this.#http.address() as AddressInfo | null)?.port ?? this.options.port;
  }

  get url(): string {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return `http://${host}:${this.port}`;
  }

  /** Requests running and waiting. */
  get load(): { running: number; waiting: number } {
    return this.#queue.load;
  }

  /** Since the server started: requests answered, requests whose client left first, tokens generated (theirs too). */
  get stats(): { requests: number; cancelled: number; completionTokens: number } {
    return { ...this.#stats };
  }

  /** Stops listening, ends the requests in flight (their clients see the connection close) and frees the sessions. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const running of this.#running) running.abort(new Error('the server is closing'));
    const closed = new Promise<void>((resolve) => this.#http.close(() => resolve()));
    this.#http.closeAllConnections();
    await closed;
    await this.#slots.dispose();
    await this.#embeddings?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const abort = new AbortController();
    // The client left before the reply ended: stop its work.
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('the client disconnected'));
    });
    this.#running.add(abort);
    try {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
      if (path === '/health') return sendJson(res, 200, { status: 'ok' });
      if (!path.startsWith('/v1/')) throw new HttpError(404, `no such endpoint: ${req.method} ${path}`, 'invalid_request_error', null, 'not_found');
      this.#authorize(req);
      if (path === '/v1/models') {
        if (req.method !== 'GET') throw methodNotAllowed(req, path, 'GET');
        return sendJson(res, 200, {
          object: 'list',
          data: [{ id: this.modelName, object: 'model', created: createdNow(), owned_by: 'metal-decode' }],
        });
      }
      const route = this.#routes[path];
      if (route === undefined) throw new HttpError(404, `no such endpoint: ${req.method} ${path}`, 'invalid_request_error', null, 'not_found');
      if (req.method !== 'POST') throw methodNotAllowed(req, path, 'POST');
      const body = await readJsonBody(req, this.options.bodyLimit);
      if (body.model !== undefined && typeof body.model !== 'string')
        throw new HttpError(400, 'model: expected a string', 'invalid_request_error', 'model');
      await route(body, res, abort.signal);
    } catch (error) {
      if (!abort.signal.aborted) sendError(res, error);
      else if (!res.writableEnded) res.end();
    } finally {
      this.#running.delete(abort);
      this.#stats.requests++;
      if (abort.signal.aborted) this.#stats.cancelled++;
    }
  }

  #authorize(req: IncomingMessage): void {
    const key = this.options.apiKey;
    if (key === undefined) return;
    if (req.headers.authorization !== `Bearer ${key}`) {
      throw new HttpError(401, 'a valid API key is required: send Authorization: Bearer <key>', 'authentication_error', null, 'invalid_api_key');
    }
  }

  #inTurn = <T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> => this.#queue.run(signal, task);

  readonly #routes: Record<string, Route> = {
    '/v1/chat/completions': (body, res, signal) =>
      chatCompletions(
        {
          modelName: this.modelName,
          vocabSize: this.model.vocabSize,
          withChat: (s, task) => this.#inTurn(s, () => this.#withChatSlot(task)),
          countTokens: this.#countTokens,
        },
        body,
        res,
        signal,
      ),
    '/v1/completions': (body, res, signal) =>
      completions(
        {
          vocabSize: this.model.vocabSize,
          modelName: this.modelName,
          withSession: (s, task) => this.#inTurn(s, () => this.#slots.withSession(task)),
          countTokens: this.#countTokens,
        },
        body,
        res,
        signal,
      ),
    '/v1/embeddings': (body, res, signal) =>
      embeddings(
        {
          modelName: this.modelName,
          embeddings: () => {
            if (this.model.createEmbeddingContext === undefined) throw new Error(`${this.modelName} has no createEmbeddingContext()`);
            return (this.#embeddings ??= this.model.createEmbeddingContext());
          },
          countTokens: async (text) => {
            const tokenizer: Tokenizer = this.model.tokenizer;
            return (tokenizer.encodeAsync ? await tokenizer.encodeAsync(text) : tokenizer.encode(text)).length;
          },
          inTurn: this.#inTurn,
        },
        body,
        res,
        signal,
      ),
  };

  // A free slot's chat session for the task (the queue runs at most `parallel` tasks: one is free).
  async #withChatSlot<T>(task: (chat: ChatSession) => Promise<T>): Promise<T> {
    if (this.model.chatTemplate === undefined) {
      throw new HttpError(
        400,
        `${this.modelName} has no chat template (tokenizer.chat_template): use /v1/completions`,
        'invalid_request_error',
        'messages',
      );
    }
    return this.#slots.withChat(task);
  }
}

function autoContextSize(model: ServedModel): number {
  if (model.autoContextSize === undefined) {
    throw new TypeError(
      "contextSize: expected a number of tokens for a model without autoContextSize() (only a GgufModel's is chosen for it: 'auto')",
    );
  }
  return model.autoContextSize().contextSize;
}

function methodNotAllowed(req: IncomingMessage, path: string, allowed: string): HttpError {
  return new HttpError(405, `${path} takes ${allowed}, not ${req.method}`, 'invalid_request_error', null, 'method_not_allowed');
}

/** An OpenAI-compatible server over `model` (not listening yet: call listen()). */
export function createServer(model: ServedModel, options?: ServerOptions): OpenAiServer {
  return new OpenAiServer(model, options);
}
