// request-body.ts: a request's JSON body, read up to a limit: a larger
// body is refused (413) as soon as it passes the limit, without reading
// the rest; a body that is not a JSON object is a 400.
import type { IncomingMessage } from 'node:http';

import { isPlainObject } from '../predicates.js';
import { HttpError } from './http-error.js';

export async function readJsonBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new HttpError(400, `the request body is not JSON: ${(error as Error).message}`);
  }
  if (!isPlainObject(body)) throw new HttpError(400, 'the request body must be a JSON object');
  return body;
}

function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    `the request body is larger than the server's limit of ${limit} bytes (bodyLimit)`,
    'invalid_request_error',
    null,
    'body_too_large',
  );
}
