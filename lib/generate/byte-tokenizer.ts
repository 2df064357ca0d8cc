// byte-tokenizer.ts: the simplest tokenizer: token t < 256 is the byte t of
// the UTF-8 text, and every token from 256 up is a control token with no
// text (end of sequence, for example). Characters outside ASCII span 2-4
// tokens, which is what the decode loop's UTF-8-safe streaming is for.
import type { Tokenizer } from './model.js';

const EMPTY = new Uint8Array(0);
const BYTES = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));

export class ByteTokenizer implements Tokenizer {
  encode(text: string): Uint8Array {
    return Buffer.from(text, 'utf8');
  }

  tokenBytes(token: number): Uint8Array {
    return BYTES[token] ?? EMPTY;
  }
}
