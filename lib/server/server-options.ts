// server-options.ts: createServer()'s options, checked with the package's
// one error shape (invalidParameterError), and their defaults.
import { invalidParameterError } from '../errors.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { checkKnownKeys, type BackendChoice } from '../sampling-options.js';

export interface ServerOptions {
  /** Where to listen. Default '127.0.0.1' (loopback): other machines reach it only when you say so. */
  host?: string;
  /** Default 8080; 0 picks a free port (server.url says which). */
  port?: number;
  /** When set, every /v1 request must send `Authorization: Bearer <apiKey>` (/health stays open). */
  apiKey?: string;
  /** Requests that run at once, each on a slot with its own KV cache, their decode steps batched. Default 4. */
  parallel?: number;
  /** Requests that may wait while `parallel` run; past this a request gets 429 at once. Default 16. */
  maxQueue?: number;
  /** The largest request body, in bytes (413 past it). Default 4 MiB. */
  bodyLimit?: number;
  /** The name /v1/models lists and responses carry. Default: the file's name without .gguf. */
  modelName?: string;
  /** The backend of the server's sequences (Session's option). */
  backend?: BackendChoice;
  /** The context of all slots together, shared out equally (llama-server's way). Default 'auto': the model's choice. */
  contextSize?: number | 'auto';
}

export interface ResolvedServerOptions {
  host: string;
  port: number;
  apiKey: string | undefined;
  parallel: number;
  maxQueue: number;
  bodyLimit: number;
  modelName: string | undefined;
  backend: BackendChoice | undefined;
  contextSize: number | 'auto' | undefined;
}

const NAMES = new Set(['host', 'port', 'apiKey', 'parallel', 'maxQueue', 'bodyLimit', 'modelName', 'backend', 'contextSize']);

function integer(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!isInteger(value)) throw invalidParameterError(name, `an integer from ${min} to ${max}`, value, 'type');
  if ((value as number) < min || (value as number) > max) throw invalidParameterError(name, `an integer from ${min} to ${max}`, value, 'range');
  return value as number;
}

function optionalString(name: string, value: unknown, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw invalidParameterError(name, what, value, 'type');
  return value;
}

export function resolveServerOptions(options: unknown): ResolvedServerOptions {
  if (options === undefined) options = {};
  if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
  checkKnownKeys(options, NAMES, '');
  const o = options as ServerOptions;
  return {
    host: optionalString('host', o.host, 'a host name or address') ?? '127.0.0.1',
    port: integer('port', o.port, 0, 65535, 8080),
    apiKey: optionalString('apiKey', o.apiKey, 'a non-empty string'),
    parallel: integer('parallel', o.parallel, 1, 64, 4),
    maxQueue: integer('maxQueue', o.maxQueue, 0, 1_000_000, 16),
    bodyLimit: integer('bodyLimit', o.bodyLimit, 1024, 1 << 30, 4 << 20),
    modelName: optionalString('modelName', o.modelName, 'a non-empty string'),
    backend: o.backend,
    contextSize: o.contextSize === undefined || o.contextSize === 'auto' ? 'auto' : integer('contextSize', o.contextSize, 16, 1 << 24, 0),
  };
}
