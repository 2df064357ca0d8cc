// reply-end.ts: how every generating endpoint ends its reply: the usage
// (a last chunk when the stream asked for it, then [DONE]), or the whole
// object as JSON.
import type { ServerResponse } from 'node:http';

import type { EventStream } from './sse.js';

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const json = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

export interface ReplyEnd {
  base: { id: string; created: number; model: string };
  /** The whole reply's object ('chat.completion') and a chunk's ('chat.completion.chunk'). */
  object: string;
  chunkObject: string;
  choices: unknown[];
  promptTokens: number;
  completionTokens: number;
  stream: EventStream | undefined;
  streamUsage: boolean;
}

export function endReply(res: ServerResponse, r: ReplyEnd): void {
  const usage = { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens };
  if (r.stream) {
    if (r.streamUsage) r.stream.send({ ...r.base, object: r.chunkObject, choices: [], usage });
    r.stream.end();
  } else {
    sendJson(res, 200, { ...r.base, object: r.object, choices: r.choices, usage });
  }
}
