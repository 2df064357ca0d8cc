// chat-completions.ts: POST /v1/chat/completions. The messages go through
// the model's chat template (a ChatSession, which reuses what its sequence
// already holds of the same conversation), the reply streams as
// server-sent events or comes whole, with OpenAI's fields.
import type { ServerResponse } from 'node:http';

import type { ChatPromptResult, ChatSession } from '../chat/chat-session.js';
import type { FunctionCallItem } from '../chat/function-calls.js';
import type { GrammarSpec } from '../grammar/grammar-spec.js';
import { isPlainObject } from '../predicates.js';
import { chatMessages } from './chat-messages.js';
import { requestTools } from './chat-tools.js';
import { badField } from './http-error.js';
import { endReply } from './reply-end.js';
import { createdNow, finishReason, replyId } from './reply-ids.js';
import { samplingFields } from './sampling-params.js';
import { EventStream } from './sse.js';

export interface ChatRoute {
  modelName: string;
  vocabSize: number;
  /** Runs `task` with the server's chat session when its turn comes. */
  withChat<T>(signal: AbortSignal, task: (chat: ChatSession) => Promise<T>): Promise<T>;
  /** Adds a reply's generated tokens to the server's count (a cancelled one's too). */
  countTokens(tokens: number): void;
}

// response_format: text, any JSON object, or JSON that matches a schema.
function responseGrammar(value: unknown): GrammarSpec | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw badField('response_format', "{ type: 'text' | 'json_object' | 'json_schema' }", value);
  switch (value.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json', schema: { type: 'object' } };
    case 'json_schema': {
      const spec = value.json_schema;
      if (!isPlainObject(spec) || !isPlainObject(spec.schema)) {
        throw badField('response_format.json_schema', '{ name, schema: { ...a JSON schema } }', spec);
      }
      return { type: 'json', schema: spec.schema };
    }
    default:
      throw badField('response_format.type', "'text', 'json_object' or 'json_schema'", value.type);
  }
}

// The calls a reply ended with, as OpenAI's tool_calls (arguments as JSON text).
function toolCalls(reply: ChatPromptResult): { id: string; type: 'function'; function: { name: string; arguments: string } }[] {
  return reply.response
    .filter((p): p is FunctionCallItem => typeof p === 'object' && p.type === 'functionCall')
    .map((call) => ({ id: replyId('call'), type: 'function', function: { name: call.name, arguments: JSON.stringify(call.params) } }));
}

export async function chatCompletions(route: ChatRoute, body: Record<string, unknown>, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const history = chatMessages(body.messages);
  const tools = requestTools(body.tools, body.tool_choice);
  const sampling = samplingFields(body, route.vocabSize);
  const grammar = responseGrammar(body.response_format);
  const id = replyId('chatcmpl');
  const created = createdNow();
  const base = { id, created, model: route.modelName };
  const stream = sampling.stream ? new EventStream(res) : undefined;
  let promptTokens = 0,
    completionTokens = 0;
  const choices: unknown[] = [];
  await route.withChat(signal, async (chat) => {
    for (let index = 0; index < sampling.choices; index++) {
      chat.setChatHistory(history);
      const seed = sampling.options.seed === undefined ? undefined : (sampling.options.seed + index) >>> 0;
      let sentRole = false;
      const delta = (d: Record<string, string>) => {
        if (!stream) return;
        stream.send({
          ...base,
          object: 'chat.completion.chunk',
          choices: [{ index, delta: sentRole ? d : { role: 'assistant', ...d }, finish_reason: null }],
        });
        sentRole = true;
      };
      const reply: ChatPromptResult = await chat.respondWithMeta({
        ...sampling.options,
        ...(seed !== undefined && { seed }),
        ...(grammar && { grammar }),
        ...(tools.functions && { functions: tools.functions, functionCalls: 'return', forceFunctionCall: tools.force }),
        signal,
        stopOnAbortSignal: true,
        onResponseChunk: (chunk) => {
          if (chunk.text !== '') delta(chunk.type === 'segment' ? { reasoning_content: chunk.text } : { content: chunk.text });
        },
      });
      const generated = reply.result.stats.generatedTokens;
      route.countTokens(generated);
      if (signal.aborted) return; // the client left: nothing to send
      completionTokens += generated;
      promptTokens = chat.session.tokens.length - generated;
      const finish = finishReason(reply.stopReason);
      const thoughts = reply.response.filter((p) => typeof p === 'object' && p.type === 'segment').map((p) => (p as { text: string }).text);
      const calls = toolCalls(reply);
      if (stream) {
        if (!sentRole) delta({ content: '' });
        if (calls.length > 0) {
          const deltas = calls.map((call, i) => ({ index: i, ...call }));
          stream.send({ ...base, object: 'chat.completion.chunk', choices: [{ index, delta: { tool_calls: deltas }, finish_reason: null }] });
        }
        stream.send({ ...base, object: 'chat.completion.chunk', choices: [{ index, delta: {}, finish_reason: finish }] });
      } else {
        const content = calls.length > 0 && reply.responseText === '' ? null : reply.responseText;
        choices.push({
          index,
          message: {
            role: 'assistant',
            content,
            ...(thoughts.length > 0 && { reasoning_content: thoughts.join('') }),
            ...(calls.length > 0 && { tool_calls: calls }),
          },
          logprobs: null,
          finish_reason: finish,
        });
      }
    }
  });
  if (signal.aborted) return;
  endReply(res, {
    base,
    object: 'chat.completion',
    chunkObject: 'chat.completion.chunk',
    choices,
    promptTokens,
    completionTokens,
    stream,
    streamUsage: sampling.streamUsage,
  });
}
