// sse.ts: a streamed reply as server-sent events, OpenAI's way: one
// `data: <json>` event per chunk, then `data: [DONE]`.
import type { ServerResponse } from 'node:http';

export class EventStream {
  constructor(private readonly res: ServerResponse) {}

  #start(): void {
    if (!this.res.headersSent) {
      this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    }
  }

  send(chunk: unknown): void {
    this.#start();
    if (!this.res.writableEnded) this.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  end(): void {
    this.#start();
    if (!this.res.writableEnded) this.res.end('data: [DONE]\n\n');
  }
}
