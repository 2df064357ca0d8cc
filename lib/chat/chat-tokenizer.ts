// chat-tokenizer.ts: what a chat needs of a model's tokenizer (a GGUF
// file's GgufTokenizer has it all).

export interface ChatTokenizer {
  encode(text: string, options?: { special?: boolean; afterText?: boolean }): ArrayLike<number>;
  /** encode(), letting the event loop turn during long text. */
  encodeAsync?(text: string, options?: { special?: boolean; afterText?: boolean }): Promise<ArrayLike<number>>;
  tokenBytes(token: number): Uint8Array;
  tokenText(token: number): string | undefined;
  /** The texts special-token parsing finds, longest first. */
  specialTexts(): readonly string[];
  readonly bosToken: number | undefined;
  readonly eosToken: number | undefined;
}

