// header-worker.ts: the worker thread of readGgufHeaderOffThread(): a GGUF
// header parsed off the main thread (a 150,000-token vocabulary takes
// @huggingface/gguf some 200 ms of parsing in one piece).
import { serveRequests } from '../request-worker.js';
import { readGgufHeader } from './read-header.js';

serveRequests<{ path: string }>(({ path }) => readGgufHeader(path));
