// chat-messages.ts: OpenAI's `messages` as a ChatSession's history.
// Content is a string or an array of text parts; 'developer' is a system
// message; an assistant message may carry tool_calls (arguments as JSON
// text), and a tool message answers one by its tool_call_id. The last
// message must be the user's or a tool's result: the reply answers it.
import type { ChatMessage, ChatToolCall } from '../tokenizers/chat-template.js';
import { isPlainObject } from '../predicates.js';
import { badField } from './http-error.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

function contentText(where: string, content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) throw badField(where, 'a string or an array of text parts', content);
  return content
    .map((part: unknown, i) => {
      if (!isPlainObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
        throw badField(`${where}[${i}]`, "a text part { type: 'text', text } (this server reads text only)", part);
      }
      return part.text;
    })
    .join('');
}

// An assistant message's calls, with their ids (which tool messages answer by).
function toolCalls(where: string, value: unknown, ids: Map<string, string>): ChatToolCall[] {
  if (!Array.isArray(value)) throw badField(where, "an array of calls { id, type: 'function', function: { name, arguments } }", value);
  return value.map((call: unknown, i): ChatToolCall => {
    const at = `${where}[${i}]`;
    const fn = isPlainObject(call) ? call.function : undefined;
    if (!isPlainObject(call) || call.type !== 'function' || !isPlainObject(fn) || typeof fn.name !== 'string') {
      throw badField(at, "a call { id, type: 'function', function: { name, arguments } }", call);
    }
    let args: unknown = fn.arguments;
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args === '' ? '{}' : args);
      } catch {
        throw badField(`${at}.function.arguments`, 'a JSON object as text', fn.arguments);
      }
    }
    if (!isPlainObject(args)) throw badField(`${at}.function.arguments`, 'a JSON object as text', fn.arguments);
    if (typeof call.id === 'string') ids.set(call.id, fn.name);
    return { type: 'function', function: { name: fn.name, arguments: args } };
  });
}

/** The conversation, its last message a user's or a tool's. */
export function chatMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw badField('messages', 'a non-empty array of messages', value);
  const callNames = new Map<string, string>(); // tool_call_id -> the function's name
  const messages = value.map((m: unknown, i): ChatMessage => {
    const where = `messages[${i}]`;
    if (!isPlainObject(m)) throw badField(where, 'a message { role, content }', m);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw badField(`${where}.role`, "'system', 'developer', 'user', 'assistant' or 'tool'", m.role);
    }
    const content = contentText(`${where}.content`, m.content);
    if (m.role === 'tool') {
      const name = typeof m.tool_call_id === 'string' ? callNames.get(m.tool_call_id) : undefined;
      if (name === undefined) throw badField(`${where}.tool_call_id`, 'the id of a call in an earlier assistant message', m.tool_call_id);
      return { role: 'tool', name, content };
    }
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls !== null) {
      const calls = toolCalls(`${where}.tool_calls`, m.tool_calls, callNames);
      if (calls.length > 0) return { role: 'assistant', content, tool_calls: calls };
    }
    return { role: m.role === 'developer' ? 'system' : (m.role as ChatMessage['role']), content };
  });
  const last = messages[messages.length - 1]!;
  if (last.role !== 'user' && last.role !== 'tool') {
    throw badField(`messages[${messages.length - 1}].role`, "'user' or 'tool': the last message is the one the reply answers", last.role);
  }
  return messages;
}
