// http-error.ts: an error a request gets as OpenAI's error body,
// { error: { message, type, param, code } }, with its HTTP status.
import type { ServerResponse } from 'node:http';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** A request field that is missing, of the wrong type or out of range: 400, naming the field and the value. */
export function badField(param: string, expected: string, actual: unknown): HttpError {
  const got = actual === undefined ? 'nothing' : (JSON.stringify(actual)?.slice(0, 200) ?? String(actual));
  return new HttpError(400, `${param}: expected ${expected}, got ${got}`, 'invalid_request_error', param);
}

/**
 * Sends `error` as OpenAI's error body. An option the package refused (its
 * TypeError or RangeError naming the option) is the request's fault: 400;
 * anything else is a 500 that says what failed.
 */
export function sendError(res: ServerResponse, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  const e =
    error instanceof HttpError
      ? error
      : error instanceof TypeError || error instanceof RangeError
        ? new HttpError(400, message)
        : new HttpError(500, message, 'server_error', null, 'internal_error');
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ error: { message: e.message, type: e.type, param: e.param, code: e.code } });
  res.writeHead(e.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
