// token-types.ts: the token types of tokenizer.ggml.token_type, and which
// of them a prompt may name by their text.

export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** Control and unknown tokens: read from a prompt's text only when special tokens are parsed, and empty text unless asked. */
export function isSpecial(type: number): boolean {
  return type === TOKEN_TYPE.control || type === TOKEN_TYPE.unknown;
}
