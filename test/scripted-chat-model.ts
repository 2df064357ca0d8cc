// scripted-chat-model.ts: a chat model that replies what a test scripts,
// with a real vocabulary and chat template (a GgufModel's) and a logits
// function in place of weights. At each step it favours the tokens whose
// text continues the scripted reply (the longest most), so a grammar that
// masks some of them still leaves the best allowed one on the script.
import { LogitsModel, type ChatModel, type GgufModel, type GgufTokenizer } from '../lib/index.js';

export interface ScriptedChat {
  model: ChatModel;
  /** Every reply text the script was asked for, in order of the turns seen. */
  readonly turns: string[];
  /** The sequence's text (special tokens included) at the model's last step. */
  readonly conversation: string;
}

/**
 * `reply(conversation)`: the whole reply the assistant should write in the
 * turn that `conversation` (the sequence's text, special tokens included)
 * ends in, its end token's text included; the reply so far is the text
 * after the last `header` (the template's assistant header).
 */
export function scriptedChat(
  base: GgufModel,
  header: string,
  reply: (conversation: string) => string,
  chatTemplate = base.chatTemplate,
): ScriptedChat {
  const tokenizer = base.tokenizer as GgufTokenizer;
  const byText = new Map<string, number>();
  for (let id = 0; id < base.vocabSize; id++) {
    const text = tokenizer.decode([id], { special: true });
    if (text !== '' && !byText.has(text)) byText.set(text, id);
  }
  const sequence: number[] = [];
  const turns: string[] = [];
  let last = '';
  const logits = new LogitsModel({
    vocabSize: base.vocabSize,
    tokenizer,
    eosTokens: [...base.eosTokens],
    logits: (tokens, position) => {
      sequence.length = position;
      sequence.push(...tokens);
      const conversation = tokenizer.decode(sequence, { special: true });
      last = conversation;
      const at = conversation.lastIndexOf(header);
      const sofar = at < 0 ? '' : conversation.slice(at + header.length);
      const target = reply(conversation);
      if (turns.at(-1) !== target) turns.push(target);
      const row = new Float32Array(base.vocabSize);
      if (!target.startsWith(sofar)) return row; // off the script: every token alike
      const rest = target.slice(sofar.length);
      if (rest === '') return row;
      for (let n = 1; n <= Math.min(rest.length, 32); n++) {
        const id = byText.get(rest.slice(0, n));
        if (id !== undefined) row[id] = 1 + n;
      }
      // Above them all, the token the tokenizer itself starts the rest with (special tokens split out first).
      row[tokenizer.encode(rest, { special: true })[0]] = 100;
      return row;
    },
  });
  const model: ChatModel = {
    vocabSize: base.vocabSize,
    tokenizer,
    eosTokens: base.eosTokens,
    bosToken: base.bosToken,
    chatTemplate,
    info: base.info,
    openSequence: (options) => logits.openSequence(options),
  };
  return {
    model,
    turns,
    get conversation() {
      return last;
    },
  };
}
