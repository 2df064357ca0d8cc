// encoder-worker.ts: the worker thread of encoder-thread.ts. workerData: a
// VocabularyForThread. Requests: { request: EncodeRequest } -> the ids (a
// transferred Uint32Array), or { prepare: true } to build the encoders.
import { workerData } from 'node:worker_threads';

import { serveRequests } from '../request-worker.js';
import { VocabularyEncoder, type EncodeRequest } from './encoder.js';
import { vocabularyOnThread, type VocabularyForThread } from './encoder-thread.js';

const encoder = new VocabularyEncoder(vocabularyOnThread(workerData as VocabularyForThread));

serveRequests<{ request?: EncodeRequest; prepare?: boolean }>(
  (message) => (message.prepare ? encoder.prepare() : Uint32Array.from(encoder.encode(message.request!))),
  (value) => (value instanceof Uint32Array ? [value.buffer as ArrayBuffer] : []),
);
