// reply-ids.ts: the ids and times OpenAI's responses carry.
import { randomBytes } from 'node:crypto';

export function replyId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

/** Seconds since the epoch, as OpenAI's `created`. */
export function createdNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** OpenAI's finish_reason for a generation's stop reason. */
export function finishReason(stopReason: string): 'stop' | 'length' | 'tool_calls' {
  if (stopReason === 'functionCalls') return 'tool_calls';
  return stopReason === 'maxTokens' || stopReason === 'contextFull' ? 'length' : 'stop';
}
