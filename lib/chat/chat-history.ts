// chat-history.ts: checking a chat history given to a ChatSession. Messages
// are { role, content } as chat templates take them; node-llama-cpp's
// history items ({ type: 'system' | 'user', text } and { type: 'model',
// response }, its function calls included) are accepted too, so a saved
// node-llama-cpp history restores.
import { invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import type { ChatMessage, ChatToolCall } from '../tokenizers/chat-template.js';
import { callMessages, type FunctionCallItem } from './function-calls.js';

const ROLES: readonly ChatMessage['role'][] = ['system', 'user', 'assistant', 'tool'];

/** node-llama-cpp's ChatHistoryItem: text, and a reply's function calls. */
export type NodeLlamaCppHistoryItem =
  | { type: 'system'; text: string }
  | { type: 'user'; text: string }
  | { type: 'model'; response: readonly (string | (Omit<FunctionCallItem, 'rawCall'> & { rawCall?: unknown }))[] };

export type ChatHistoryInput = ChatMessage | NodeLlamaCppHistoryItem;

function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidParameterError(name, 'a string', value, 'type');
  return value;
}

function toolCalls(name: string, value: unknown): ChatToolCall[] {
  if (!Array.isArray(value))
    throw invalidParameterError(name, "an array of calls ({ type: 'function', function: { name, arguments } })", value, 'type');
  return value.map((call: unknown, i) => {
    const fn = isPlainObject(call) ? call.function : undefined;
    if (!isPlainObject(call) || call.type !== 'function' || !isPlainObject(fn) || typeof fn.name !== 'string' || !isPlainObject(fn.arguments)) {
      throw invalidParameterError(`${name}[${i}]`, "a call { type: 'function', function: { name, arguments: {...} } }", call, 'type');
    }
    return { type: 'function', function: { name: fn.name, arguments: { ...fn.arguments } } };
  });
}

// A node-llama-cpp reply: its text, and per run of calls an assistant message with them and their results.
function modelItems(name: string, response: unknown): ChatMessage[] {
  if (!Array.isArray(response)) throw invalidParameterError(`${name}.response`, 'an array of strings and function calls', response, 'type');
  const out: ChatMessage[] = [];
  let text = '';
  let calls: FunctionCallItem[] = [];
  const flush = () => {
    if (calls.length > 0) out.push(...callMessages(text, calls));
    else out.push({ role: 'assistant', content: text });
    text = '';
    calls = [];
  };
  response.forEach((part: unknown, j) => {
    if (typeof part === 'string') {
      if (calls.length > 0) flush();
      text += part;
      return;
    }
    if (!isPlainObject(part) || part.type !== 'functionCall' || typeof part.name !== 'string' || !isPlainObject(part.params ?? {})) {
      throw invalidParameterError(
        `${name}.response[${j}]`,
        "a string or a function call { type: 'functionCall', name, params, result }",
        part,
        'type',
      );
    }
    calls.push({
      type: 'functionCall',
      name: part.name,
      params: { ...((part.params as object | undefined) ?? {}) },
      result: part.result,
      rawCall: '',
    });
  });
  flush();
  return out;
}

export function checkChatHistory(history: unknown): ChatMessage[] {
  if (!Array.isArray(history)) throw invalidParameterError('history', 'an array of messages ({ role, content })', history, 'type');
  // Every index, holes included (map() would skip them and keep the holes).
  return Array.from({ length: history.length }, (_, i): ChatMessage[] => {
    const name = `history[${i}]`;
    if (!(i in history)) throw invalidParameterError(name, 'a message ({ role, content }), not an empty slot of a sparse array', undefined, 'type');
    const item: unknown = history[i];
    if (!isPlainObject(item)) throw invalidParameterError(name, 'a message ({ role, content })', item, 'type');
    if ('role' in item) {
      const role = item.role as ChatMessage['role'];
      if (!ROLES.includes(role)) throw invalidParameterError(`${name}.role`, ROLES.map((r) => `'${r}'`).join(', '), role, 'range');
      const message: ChatMessage = { role, content: text(`${name}.content`, item.content) };
      if (item.tool_calls !== undefined) {
        if (role !== 'assistant') throw invalidParameterError(`${name}.tool_calls`, 'calls on an assistant message only', role, 'range');
        message.tool_calls = toolCalls(`${name}.tool_calls`, item.tool_calls);
      }
      if (item.name !== undefined) message.name = text(`${name}.name`, item.name);
      return [message];
    }
    switch (item.type) {
      case 'system':
      case 'user':
        return [{ role: item.type, content: text(`${name}.text`, item.text) }];
      case 'model':
        return modelItems(name, item.response);
      default:
        throw invalidParameterError(name, "a message { role, content } or a node-llama-cpp item of type 'system', 'user' or 'model'", item, 'type');
    }
  }).flat();
}

/**
 * The history as node-llama-cpp's items: a reply with its calls is one
 * { type: 'model', response } item of its text parts and { type:
 * 'functionCall', name, params, result } parts (a result written as JSON
 * is read back as its value).
 */
export function toNodeLlamaCppHistory(history: readonly ChatMessage[]): NodeLlamaCppHistoryItem[] {
  const out: NodeLlamaCppHistoryItem[] = [];
  let model: (string | Omit<FunctionCallItem, 'rawCall'>)[] | undefined; // the reply being gathered
  const resultOf = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  for (let i = 0; i < history.length; i++) {
    const m = history[i];
    if (m.role === 'system' || m.role === 'user') {
      model = undefined;
      out.push({ type: m.role, text: m.content });
      continue;
    }
    if (model === undefined) out.push({ type: 'model', response: (model = []) });
    if (m.role === 'tool') continue; // read with its call
    if (m.content !== '') model.push(m.content);
    for (const call of m.tool_calls ?? []) {
      const result = history[i + 1]?.role === 'tool' ? resultOf(history[++i].content) : undefined;
      model.push({ type: 'functionCall', name: call.function.name, params: call.function.arguments, result });
    }
  }
  return out;
}
