// byte-level.ts: GPT-2's byte-level alphabet, which spells each of the 256
// bytes as a printable code point (the printable Latin-1 bytes as
// themselves, the rest as U+0100 onwards). Byte-level BPE vocabularies
// store their tokens in it; the grammar engine takes any token's bytes in
// it.

let alphabet: { codePoints: number[]; chars: string[]; bytes: Map<number, number> } | undefined;

function byteLevelAlphabet(): { codePoints: number[]; chars: string[]; bytes: Map<number, number> } {
  if (alphabet) return alphabet;
  const codePoints = new Array<number>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    codePoints[b] = printable ? b : 256 + extra++;
  }
  // Every code point is below U+0200: one UTF-16 unit each.
  alphabet = { codePoints, chars: codePoints.map((c) => String.fromCharCode(c)), bytes: new Map(codePoints.map((c, b) => [c, b])) };
  return alphabet;
}

/** The 256 characters of the alphabet, by the byte each spells. */
export function byteLevelChars(): readonly string[] {
  return byteLevelAlphabet().chars;
}

/** The bytes a byte-level string spells; undefined when a character is not in the alphabet. */
export function bytesOfByteLevel(text: string): Uint8Array | undefined {
  const { bytes } = byteLevelAlphabet();
  const out: number[] = [];
  for (const ch of text) {
    const b = bytes.get(ch.codePointAt(0)!);
    if (b === undefined) return undefined;
    out.push(b);
  }
  return Uint8Array.from(out);
}

/** `bytes` spelled in the byte-level alphabet. */
export function byteLevelOfBytes(bytes: Uint8Array): string {
  const { chars } = byteLevelAlphabet();
  let text = '';
  for (let i = 0; i < bytes.length; i++) text += chars[bytes[i]];
  return text;
}
