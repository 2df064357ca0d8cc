// completions.ts: POST /v1/completions: the continuation of a text, on a
// slot's session rewound to nothing (what generate() on a sequence of its
// own gives), streamed or whole.
import type { ServerResponse } from 'node:http';

import type { Session } from '../generate/session.js';
import { badField } from './http-error.js';
import { endReply } from './reply-end.js';
import { createdNow, finishReason, replyId } from './reply-ids.js';
import { samplingFields } from './sampling-params.js';
import { EventStream } from './sse.js';

export interface CompletionRoute {
  vocabSize: number;
  modelName: string;
  /** Runs `task` with a slot's session when its turn comes. */
  withSession<T>(signal: AbortSignal, task: (session: Session) => Promise<T>): Promise<T>;
  countTokens(tokens: number): void;
}

function promptText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.length === 1 && typeof value[0] === 'string') return value[0];
  throw badField('prompt', 'a string (or an array of one string)', value);
}

export async function completions(route: CompletionRoute, body: Record<string, unknown>, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const prompt = promptText(body.prompt);
  const sampling = samplingFields(body, route.vocabSize);
  const base = { id: replyId('cmpl'), created: createdNow(), model: route.modelName };
  const stream = sampling.stream ? new EventStream(res) : undefined;
  let promptTokens = 0,
    completionTokens = 0;
  const choices: unknown[] = [];
  await route.withSession(signal, async (session) => {
    for (let index = 0; index < sampling.choices; index++) {
      const seed = sampling.options.seed === undefined ? undefined : (sampling.options.seed + index) >>> 0;
      session.rewind(0);
      const result = await session.generate(prompt, {
        ...sampling.options,
        ...(seed !== undefined && { seed }),
        signal,
        stopOnAbortSignal: true,
        onTextChunk: (text) => {
          if (stream && text !== '')
            stream.send({ ...base, object: 'text_completion', choices: [{ index, text, logprobs: null, finish_reason: null }] });
        },
      });
      route.countTokens(result.stats.generatedTokens);
      if (signal.aborted) return;
      promptTokens = result.stats.promptTokens;
      completionTokens += result.stats.generatedTokens;
      const finish = finishReason(result.stopReason);
      if (stream) stream.send({ ...base, object: 'text_completion', choices: [{ index, text: '', logprobs: null, finish_reason: finish }] });
      else choices.push({ index, text: result.text, logprobs: null, finish_reason: finish });
    }
  });
  if (signal.aborted) return;
  endReply(res, {
    base,
    object: 'text_completion',
    chunkObject: 'text_completion',
    choices,
    promptTokens,
    completionTokens,
    stream,
    streamUsage: sampling.streamUsage,
  });
}
