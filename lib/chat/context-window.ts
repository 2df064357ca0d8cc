// context-window.ts: the part of a conversation a ChatSession's sequence
// holds when the whole no longer fits its context (node-llama-cpp's
// contextShift for chat sessions). A strategy takes the conversation and
// returns a shorter one that fits; the default keeps the system prompt and
// drops the oldest turns after it. The full conversation stays in the
// history (getChatHistory()); only what the model sees shrinks.
import { integerInRange, invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import type { ChatMessage } from '../tokenizers/chat-template.js';

export interface ChatContextShiftStrategyOptions {
  /** The conversation to shorten: the system prompt, the turns, and the new user message last. */
  chatHistory: readonly ChatMessage[];
  /** The most tokens the rendered result may have. */
  maxTokensCount: number;
  /** The tokens a conversation renders to with the session's template (BOS included). */
  tokenCount(history: readonly ChatMessage[]): Promise<number>;
}

/** Returns the conversation the model will see (its last message must be the new user message). */
export type ChatContextShiftStrategy = (
  options: ChatContextShiftStrategyOptions,
) => readonly ChatMessage[] | { chatHistory: readonly ChatMessage[] } | Promise<readonly ChatMessage[] | { chatHistory: readonly ChatMessage[] }>;

export interface ChatContextShiftOptions {
  /**
   * Tokens left free for the reply when the conversation is shortened
   * before a prompt, and dropped at once when a reply fills the context.
   * Default min(100, ceil(contextSize / 10)), node-llama-cpp's.
   */
  size?: number;
  /** How to shorten the conversation. Default 'eraseFirstResponseAndKeepFirstSystem'. */
  strategy?: 'eraseFirstResponseAndKeepFirstSystem' | ChatContextShiftStrategy;
}

export interface ResolvedChatContextShift {
  size: number | undefined;
  strategy: ChatContextShiftStrategy;
}

const NAMES = new Set(['size', 'strategy']);

/** contextShift: undefined or true (on, the defaults), false (off), or { size, strategy }. */
export function resolveChatContextShift(value: unknown): ResolvedChatContextShift | undefined {
  if (value === false) return undefined;
  if (value === undefined || value === true) return { size: undefined, strategy: eraseFirstResponseAndKeepFirstSystem };
  if (!isPlainObject(value)) throw invalidParameterError('contextShift', 'true, false or { size, strategy }', value, 'type');
  checkKnownKeys(value, NAMES, 'contextShift.');
  const size = value.size === undefined ? undefined : integerInRange('contextShift.size', value.size, 1, 1 << 24);
  const strategy = value.strategy ?? 'eraseFirstResponseAndKeepFirstSystem';
  if (strategy === 'eraseFirstResponseAndKeepFirstSystem') return { size, strategy: eraseFirstResponseAndKeepFirstSystem };
  if (typeof strategy !== 'function') {
    throw invalidParameterError('contextShift.strategy', "'eraseFirstResponseAndKeepFirstSystem' or a function", strategy, 'type');
  }
  return { size, strategy: strategy as ChatContextShiftStrategy };
}

/**
 * node-llama-cpp's default: the first system message stays, and the oldest
 * messages after it go, a turn at a time (a user message with the replies
 * and tool results after it), until the rest fits. The new user message
 * always stays; when it alone does not fit, what is left is returned and
 * the caller says so.
 */
export async function eraseFirstResponseAndKeepFirstSystem({
  chatHistory,
  maxTokensCount,
  tokenCount,
}: ChatContextShiftStrategyOptions): Promise<ChatMessage[]> {
  const system = chatHistory[0]?.role === 'system' ? [chatHistory[0]] : [];
  const rest = chatHistory.slice(system.length);
  // Turn t starts at its user message (the first at 0, with whatever comes before it).
  const starts = rest.map((m, i) => (i === 0 || m.role === 'user' ? i : -1)).filter((i) => i >= 0);
  const lastTurns = (k: number) => [...system, ...rest.slice(starts[starts.length - k])];
  const fits = async (k: number) => (await tokenCount(lastTurns(k))) <= maxTokensCount;
  if (await fits(starts.length)) return [...system, ...rest];
  // The most recent turns that fit, counted from the newest: doubling, then
  // halving the gap, so each rendering is at most about twice the context
  // (a long history is never rendered whole again).
  let fitting = 0,
    over = starts.length;
  for (let k = 1; k < starts.length; k *= 2) {
    if (!(await fits(k))) {
      over = k;
      break;
    }
    fitting = k;
  }
  while (over - fitting > 1) {
    const middle = (fitting + over) >>> 1;
    if (await fits(middle)) fitting = middle;
    else over = middle;
  }
  return lastTurns(Math.max(fitting, 1)); // the last turn even when it does not fit: the caller says so
}

/** The strategy's answer, checked: a list of messages ending with the new user message. */
export function checkStrategyResult(result: unknown, newMessage: ChatMessage): ChatMessage[] {
  const history = isPlainObject(result) && 'chatHistory' in result ? result.chatHistory : result;
  if (!Array.isArray(history) || history.some((m) => !isPlainObject(m) || typeof m.role !== 'string' || typeof m.content !== 'string')) {
    throw invalidParameterError("contextShift.strategy's result", 'an array of messages ({ role, content }), or { chatHistory }', result, 'type');
  }
  const last = history[history.length - 1] as ChatMessage | undefined;
  if (last?.role !== newMessage.role || last.content !== newMessage.content) {
    throw invalidParameterError("contextShift.strategy's result", 'a conversation that ends with the new user message', last, 'range');
  }
  return (history as ChatMessage[]).map((m) => ({ ...m }));
}
