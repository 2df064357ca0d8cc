// chat-history.ts: checking a chat history given to a ChatSession. Messages
// are { role, content } as chat templates take them; node-llama-cpp's
// history items ({ type: 'system' | 'user', text } and { type: 'model',
// response }) are accepted too, so a saved node-llama-cpp history restores.
import { invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import type { ChatMessage } from '../tokenizers/chat-template.js';

const ROLES: readonly ChatMessage['role'][] = ['system', 'user', 'assistant', 'tool'];

/** node-llama-cpp's ChatHistoryItem, as far as text goes. */
export type NodeLlamaCppHistoryItem =
  { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: readonly string[] };

export type ChatHistoryInput = ChatMessage | NodeLlamaCppHistoryItem;

function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidParameterError(name, 'a string', value, 'type');
  return value;
}

export function checkChatHistory(history: unknown): ChatMessage[] {
  if (!Array.isArray(history)) throw invalidParameterError('history', 'an array of messages ({ role, content })', history, 'type');
  // Every index, holes included (map() would skip them and keep the holes).
  return Array.from({ length: history.length }, (_, i): ChatMessage => {
    const name = `history[${i}]`;
    if (!(i in history)) throw invalidParameterError(name, 'a message ({ role, content }), not an empty slot of a sparse array', undefined, 'type');
    const item: unknown = history[i];
    if (!isPlainObject(item)) throw invalidParameterError(name, 'a message ({ role, content })', item, 'type');
    if ('role' in item) {
      const role = item.role as ChatMessage['role'];
      if (!ROLES.includes(role)) throw invalidParameterError(`${name}.role`, ROLES.map((r) => `'${r}'`).join(', '), role, 'range');
      return { role, content: text(`${name}.content`, item.content) };
    }
    switch (item.type) {
      case 'system':
      case 'user':
        return { role: item.type, content: text(`${name}.text`, item.text) };
      case 'model': {
        const response = item.response;
        if (!Array.isArray(response)) throw invalidParameterError(`${name}.response`, 'an array of strings', response, 'type');
        response.forEach((part, j) => text(`${name}.response[${j}]`, part)); // function calls are not supported
        return { role: 'assistant', content: response.join('') };
      }
      default:
        throw invalidParameterError(name, "a message { role, content } or a node-llama-cpp item of type 'system', 'user' or 'model'", item, 'type');
    }
  });
}
