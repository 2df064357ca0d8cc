// template-worker.ts: the worker thread of ChatTemplate.renderAsync.
// workerData: { source, origin }. Requests: { messages, options } -> the
// rendered text. A chat template is code from a file: a loop of millions
// of steps runs here, on a thread that a time limit or an abort can end,
// never on the event loop.
import { workerData } from 'node:worker_threads';

import { serveRequests } from '../request-worker.js';
import { ChatTemplate, type ChatMessage, type RenderOptions } from './chat-template.js';

const { source, origin } = workerData as { source: string; origin: string };
const template = new ChatTemplate(source, origin);

serveRequests<{ messages: ChatMessage[]; options: RenderOptions }>(({ messages, options }) => template.render(messages, options));
