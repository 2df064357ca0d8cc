// header-worker.ts: the worker thread of readGgufHeaderOffThread(): a GGUF
// header parsed off the main thread (a 150,000-token vocabulary takes
// @huggingface/gguf some 200 ms of parsing in one piece).
import { serveRequests } from '../request-worker.js';
import { packedBuffers, packHeader, readGgufHeader, type PackedHeader } from './read-header.js';

serveRequests<{ path: string }>(
  async ({ path }) => packHeader(await readGgufHeader(path)),
  (value) => packedBuffers(value as PackedHeader),
);
