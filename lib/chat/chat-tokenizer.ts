// chat-tokenizer.ts: what a chat needs of a model's tokenizer (a GGUF
// file's GgufTokenizer has it all).

export interface ChatTokenizer {
  /** Pieces with and without special tokens parsed, encoded as one text (special tokens split out, the runs between them whole). */
  encodePieces(pieces: readonly { text: string; special: boolean }[], options?: { afterText?: boolean }): Promise<ArrayLike<number>>;
  tokenBytes(token: number): Uint8Array;
  tokenText(token: number): string | undefined;
  /** The texts special-token parsing finds, longest first. */
  specialTexts(): readonly string[];
  readonly bosToken: number | undefined;
  readonly eosToken: number | undefined;
}
