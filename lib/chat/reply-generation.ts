// reply-generation.ts: one generation of a ChatSession's reply, with a
// reasoning model's thoughts split from its text as it streams, and the
// thought budget kept (thought-segments.ts has the splitting).
import type { GenerationResult } from '../generate/decode-loop.js';
import type { GenerateOptions } from '../generate/generate-options.js';
import type { Session } from '../generate/session.js';
import { invalidParameterError } from '../errors.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import type { ChatTokenizer } from './chat-tokenizer.js';
import { opensThought, ThoughtSplitter, type ResponseChunk, type ThoughtSegment, type ThoughtTags } from './thought-segments.js';

// One generation of a reply: its result, its text as generated (thoughts
// and any closing tag written for the budget included: what the history
// keeps), and that text split.
export interface ReplyPart {
  result: GenerationResult;
  raw: string;
  injected: boolean;
  text: string;
  thought?: ThoughtSegment;
}

export interface ReplyOptions {
  onResponseChunk: ((chunk: ResponseChunk) => void) | undefined;
  thoughtTokens: number;
}

export function checkReplyOptions(onResponseChunk: unknown, budgets: unknown): ReplyOptions {
  if (onResponseChunk !== undefined && typeof onResponseChunk !== 'function')
    throw invalidParameterError('onResponseChunk', 'a function', onResponseChunk, 'type');
  if (budgets !== undefined && !isPlainObject(budgets)) throw invalidParameterError('budgets', 'an object { thoughtTokens }', budgets, 'type');
  if (budgets !== undefined) checkKnownKeys(budgets, new Set(['thoughtTokens']), 'budgets.');
  const thoughtTokens = budgets?.thoughtTokens;
  if (thoughtTokens !== undefined && !(isInteger(thoughtTokens) && thoughtTokens >= 0)) {
    throw invalidParameterError('budgets.thoughtTokens', 'an integer >= 0', thoughtTokens, isInteger(thoughtTokens) ? 'range' : 'type');
  }
  return { onResponseChunk: onResponseChunk as ReplyOptions['onResponseChunk'], thoughtTokens: (thoughtTokens as number | undefined) ?? Infinity };
}

// One generation of the reply (up to a call, after results, or to its
// end). With a template that has thoughts, the text streams split: the
// thinking to onResponseChunk only, the rest to onTextChunk too; a
// thought past budgets.thoughtTokens is closed (the template's tag
// written) and the reply goes on. `rendered`: the prompt's text, whose
// generation prompt may open a thought (undefined: the reply goes on
// outside one).
export async function generateReply(
  on: { session: Session; tokenizer: ChatTokenizer; tags: ThoughtTags | undefined },
  tokens: Uint32Array,
  options: GenerateOptions,
  reply: ReplyOptions,
  extra: GenerateOptions,
  rendered: string | undefined,
): Promise<ReplyPart> {
  const tags = on.tags;
  const splitter = tags && new ThoughtSplitter(tags, rendered !== undefined && opensThought(rendered, tags));
  const thought: string[] = [],
    text: string[] = [];
  let stopped = false; // by the user's onTextChunk
  const route = (chunks: readonly ResponseChunk[]) => {
    for (const chunk of chunks) {
      (chunk.type === 'text' ? text : thought).push(chunk.text);
      reply.onResponseChunk?.(chunk);
      if (chunk.type === 'text' && options.onTextChunk?.(chunk.text) === false) stopped = true;
    }
  };
  let thoughtTokens = 0,
    overBudget = false;
  const budget = reply.thoughtTokens;
  const streamed: GenerateOptions = {
    ...options,
    ...extra,
    onTextChunk: (chunk) => (route(splitter ? splitter.push(chunk) : [{ type: 'text', text: chunk }]), stopped ? false : undefined),
    onToken: (token) => {
      const answer = options.onToken?.(token);
      if (splitter?.inThought && ++thoughtTokens >= budget) overBudget = true;
      return overBudget ? false : answer;
    },
  };
  const closing = async (text: string) => Uint32Array.from(await on.tokenizer.encodePieces([{ text, special: true }], { afterText: true }));
  let raw = '';
  let injected = false;
  if (budget === 0 && splitter?.inThought) {
    // No thinking at all: the thought the generation prompt opened is closed before the first token.
    raw = `${tags!.close}\n\n`;
    splitter.push(raw);
    tokens = Uint32Array.from([...tokens, ...(await closing(raw))]);
    injected = true;
  }
  let result = await on.session.generate(tokens, streamed);
  raw += result.text;
  while (overBudget && result.stopReason === 'callback' && splitter?.inThought && !stopped) {
    // The thought is closed as the template writes it, and the reply goes on.
    const close = `${raw.endsWith('\n') ? '' : '\n'}${tags!.close}\n\n`;
    splitter.push(close);
    raw += close;
    injected = true;
    overBudget = false;
    const left = (options.maxTokens ?? Infinity) - thoughtTokens;
    result = await on.session.generate(await closing(close), { ...streamed, maxTokens: Math.max(0, left) });
    raw += result.text;
  }
  if (splitter) route(splitter.flush());
  const state = splitter?.state;
  return {
    result,
    raw,
    injected,
    text: text.join(''),
    ...(state?.seen && { thought: { type: 'segment', segmentType: 'thought', text: thought.join(''), ended: state.ended } }),
  };
}
