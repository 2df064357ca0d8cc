// embeddings.ts: POST /v1/embeddings: each input's embedding, pooled as
// the file declares (createEmbeddingContext), in OpenAI's list shape.
import type { ServerResponse } from 'node:http';

import type { EmbeddingContext } from '../models/embedding-context.js';
import { badField, HttpError } from './http-error.js';
import { sendJson } from './reply-end.js';

export interface EmbeddingRoute {
  modelName: string;
  /** The model's embedding context (made at the first request), or why there is none. */
  embeddings(): EmbeddingContext;
  countTokens(text: string): Promise<number>;
  inTurn<T>(signal: AbortSignal, task: () => Promise<T>): Promise<T>;
}

/** The most inputs one request may embed. */
export const MAX_EMBEDDING_INPUTS = 256;

function inputTexts(value: unknown): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_EMBEDDING_INPUTS || list.some((t) => typeof t !== 'string')) {
    throw badField('input', `a string or an array of 1 to ${MAX_EMBEDDING_INPUTS} strings`, value);
  }
  return list as string[];
}

export async function embeddings(route: EmbeddingRoute, body: Record<string, unknown>, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const texts = inputTexts(body.input);
  const format = body.encoding_format;
  if (format !== undefined && format !== null && format !== 'float') throw badField('encoding_format', "'float'", format);
  const data: unknown[] = [];
  let tokens = 0;
  await route.inTurn(signal, async () => {
    let context: EmbeddingContext;
    try {
      context = route.embeddings();
    } catch (error) {
      throw new HttpError(400, `this model gives no embeddings: ${(error as Error).message}`, 'invalid_request_error', 'input');
    }
    for (const [index, text] of texts.entries()) {
      if (signal.aborted) return;
      const embedding = await context.getEmbeddingFor(text);
      tokens += await route.countTokens(text);
      data.push({ object: 'embedding', index, embedding: embedding.vector });
    }
  });
  if (signal.aborted) return;
  sendJson(res, 200, { object: 'list', data, model: route.modelName, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}
