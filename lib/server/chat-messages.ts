// chat-messages.ts: OpenAI's `messages` as a ChatSession's history and the
// user's last message. Content is a string or an array of text parts;
// 'developer' is a system message. The last message must be the user's:
// the reply is the model's answer to it.
import type { ChatMessage } from '../tokenizers/chat-template.js';
import { isPlainObject } from '../predicates.js';
import { badField } from './http-error.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);

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

export function chatMessages(value: unknown): { history: ChatMessage[]; last: string } {
  if (!Array.isArray(value) || value.length === 0) throw badField('messages', 'a non-empty array of messages', value);
  const messages = value.map((m: unknown, i): ChatMessage => {
    const where = `messages[${i}]`;
    if (!isPlainObject(m)) throw badField(where, 'a message { role, content }', m);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw badField(`${where}.role`, "'system', 'developer', 'user' or 'assistant' (tool messages are not supported yet)", m.role);
    }
    if (m.tool_calls !== undefined && m.tool_calls !== null)
      throw badField(`${where}.tool_calls`, 'none (tools are not supported yet)', m.tool_calls);
    const role = m.role === 'developer' ? 'system' : (m.role as ChatMessage['role']);
    return { role, content: contentText(`${where}.content`, m.content) };
  });
  const last = messages[messages.length - 1]!;
  if (last.role !== 'user')
    throw badField(`messages[${messages.length - 1}].role`, "'user': the last message is the one the reply answers", last.role);
  return { history: messages.slice(0, -1), last: last.content };
}
