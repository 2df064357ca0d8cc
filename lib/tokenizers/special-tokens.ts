// special-tokens.ts: splitting a prompt at the texts of special tokens
// before the rest is tokenized, as llama.cpp's tokenizer_st_partition does:
// longest token text first, every occurrence in every piece of text left.
// User-defined tokens are always split out; control and unknown tokens only
// when the caller parses special tokens, so user text cannot inject a turn
// marker.
import type { GgufVocabulary } from './gguf-vocabulary.js';
import { isSpecial, TOKEN_TYPE } from './token-types.js';

/** A piece of the prompt: text to tokenize, or a token found by its text. */
export type Fragment = string | number;

/** The tokens to split out, longest text first. */
export function specialTokens(v: GgufVocabulary, parseSpecial: boolean): { id: number; text: string }[] {
  const found: { id: number; text: string }[] = [];
  v.types.forEach((type, id) => {
    if (type === TOKEN_TYPE.userDefined || (parseSpecial && isSpecial(type))) {
      if (v.tokens[id] !== '') found.push({ id, text: v.tokens[id] });
    }
  });
  // Stable, so equal lengths keep id order.
  return found.sort((a, b) => utf8Length(b.text) - utf8Length(a.text));
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

export function partition(text: string, special: readonly { id: number; text: string }[]): Fragment[] {
  let fragments: Fragment[] = text === '' ? [] : [text];
  for (const { id, text: token } of special) {
    if (!fragments.some((f) => typeof f === 'string' && f.includes(token))) continue;
    const next: Fragment[] = [];
    for (const f of fragments) {
      if (typeof f !== 'string') {
        next.push(f);
        continue;
      }
      const parts = f.split(token);
      parts.forEach((part, i) => {
        if (i > 0) next.push(id);
        if (part !== '') next.push(part);
      });
    }
    fragments = next;
  }
  return fragments;
}
