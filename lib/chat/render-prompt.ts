// render-prompt.ts: a conversation rendered with its chat template, as the
// pieces to encode. Special tokens are read from the template's own text
// (turn markers, BOS) but never from the messages, so a user who types
// "<|im_start|>system" sends that text, not a turn marker (as node-llama-cpp
// keeps user text apart from its special tokens). The pieces are then
// encoded as one text: the special tokens split out, and each run of text
// between them encoded whole, messages included.
//
// Special-token texts inside a message are swapped for private-use
// placeholders before rendering (templates strip and split messages, so
// the message cannot be found again afterwards) and become pieces without
// special parsing where they land in the rendering.
import type { ChatMessage, ChatTemplate, RenderOptions } from '../tokenizers/chat-template.js';
import type { ChatTokenizer } from './chat-tokenizer.js';

export interface PromptPiece {
  text: string;
  /** Parse special tokens: the template's text (true) or a message's special-looking text (false). */
  special: boolean;
}

export interface RenderedPrompt {
  /** The rendering, with each message's text as written. */
  text: string;
  /** The same text in pieces, in order. */
  pieces: PromptPiece[];
}

const OPEN = '\u{F0000}',
  CLOSE = '\u{F0001}';
const PLACEHOLDER = /\u{F0000}(\d+)\u{F0001}/gu;

/**
 * The conversation rendered, with the generation prompt, BOS and EOS texts
 * the template may print; on the template's worker thread (a template is
 * code from a file), abortable by `signal`.
 */
export async function renderPrompt(
  template: ChatTemplate,
  history: readonly ChatMessage[],
  tokenizer: ChatTokenizer,
  variables?: Readonly<Record<string, unknown>>,
  signal?: AbortSignal,
): Promise<RenderedPrompt> {
  const specialTexts = tokenizer.specialTexts();
  const text = (id: number | undefined) => (id === undefined ? '' : (tokenizer.tokenText(id) ?? ''));
  const options: RenderOptions = { addGenerationPrompt: true, bosToken: text(tokenizer.bosToken), eosToken: text(tokenizer.eosToken), variables };
  const swapped: string[] = [];
  const guarded = history.map((message) => {
    if (!specialTexts.some((t) => message.content.includes(t))) return message;
    let content = message.content;
    for (const t of specialTexts) {
      if (!content.includes(t)) continue;
      content = content.split(t).join(`${OPEN}${swapped.length}${CLOSE}`);
      swapped.push(t);
    }
    return { ...message, content };
  });
  const rendered = await template.renderAsync(guarded, options, signal);
  if (swapped.length === 0) return { text: rendered, pieces: [{ text: rendered, special: true }] };
  const pieces: PromptPiece[] = [];
  let at = 0;
  for (const match of rendered.matchAll(PLACEHOLDER)) {
    if (match.index > at) pieces.push({ text: rendered.slice(at, match.index), special: true });
    pieces.push({ text: swapped[Number(match[1])], special: false });
    at = match.index + match[0].length;
  }
  if (at < rendered.length) pieces.push({ text: rendered.slice(at), special: true });
  return { text: pieces.map((p) => p.text).join(''), pieces };
}

/** The pieces of the text from character `offset` on. */
export function piecesFrom(prompt: RenderedPrompt, offset: number): PromptPiece[] {
  const out: PromptPiece[] = [];
  let at = 0;
  for (const piece of prompt.pieces) {
    const end = at + piece.text.length;
    if (end > offset) out.push(at >= offset ? piece : { ...piece, text: piece.text.slice(offset - at) });
    at = end;
  }
  return out;
}

/** The pieces' tokens, after `lastToken` (the sequence's last, if any). */
export async function encodePieces(tokenizer: ChatTokenizer, pieces: readonly PromptPiece[], lastToken: number | undefined): Promise<number[]> {
  // SentencePiece puts a space before text only at the start and after a special token.
  const afterText = lastToken !== undefined && tokenizer.tokenBytes(lastToken).length > 0;
  return Array.from(await tokenizer.encodePieces(pieces, { afterText }));
}
