// text-stream.ts: turns generated tokens into text that is safe to hand
// out. Two things hold text back:
// - a character whose UTF-8 bytes span tokens: the decoder keeps the
//   leading bytes until the character is complete (its tokens are released
//   with empty text meanwhile), so no event ever carries half a character;
// - a possible stop trigger: while the text ends with a proper prefix of a
//   trigger, the tokens holding it wait. When the trigger completes, the
//   text before it is released and the trigger itself never is.

export interface TextPiece {
  token: number;
  /** The text this token releases. */
  text: string;
  /** The partial character after this token (Utf8Carry.save()), to rewind to. */
  carry: Uint8Array;
}

/**
 * A UTF-8 decoder whose partial character is plain bytes, so it can be
 * saved and restored when the loop rewinds, and carried from one generate()
 * call to the next.
 */
export class Utf8Carry {
  // ignoreBOM: a generated U+FEFF is text like any other, not a marker to drop.
  static readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  #partial: Uint8Array = new Uint8Array(0);

  /** The complete characters these bytes finish (invalid bytes become U+FFFD). */
  decode(bytes: Uint8Array): string {
    const all = new Uint8Array(this.#partial.length + bytes.length);
    all.set(this.#partial);
    all.set(bytes, this.#partial.length);
    const complete = all.length - incompleteTail(all);
    this.#partial = all.slice(complete);
    return Utf8Carry.#decoder.decode(all.subarray(0, complete));
  }

  /** The bytes of a character not finished yet. */
  save(): Uint8Array {
    return this.#partial;
  }

  restore(partial: Uint8Array): void {
    this.#partial = partial;
  }

  /** Forgets a partial character (a new prompt starts new text). */
  reset(): void {
    this.#partial = new Uint8Array(0);
  }
}

// How many bytes at the end of `bytes` begin a character that needs more
// bytes: a lead byte within the last three whose sequence runs past the end.
function incompleteTail(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const length = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

export interface PushResult {
  /** Tokens now safe to hand out, oldest first. */
  released: TextPiece[];
  /** The trigger that just completed: `released` then ends at the token that completed it. */
  trigger?: string;
}

export class StopTriggerStream {
  readonly #triggers: readonly string[];
  readonly #decoder: Utf8Carry;
  #pending: TextPiece[] = [];
  #pendingText = '';

  constructor(decoder: Utf8Carry, triggers: readonly string[]) {
    this.#decoder = decoder;
    this.#triggers = triggers;
  }

  /** Tokens held back, waiting to see whether they start a trigger. */
  get held(): number {
    return this.#pending.length;
  }

  push(token: number, bytes: Uint8Array): PushResult {
    const text = this.#decoder.decode(bytes);
    this.#pending.push({ token, text, carry: this.#decoder.save() });
    this.#pendingText += text;
    if (this.#triggers.length === 0) return { released: this.#takeAll() };

    const match = this.#firstMatch();
    if (match) return { released: this.#clipAt(match.index), trigger: match.trigger };
    return { released: this.#releaseBefore(this.#pendingText.length - this.#longestPrefixSuffix()) };
  }

  /** Releases every held token (generation ended without a trigger). */
  flush(): TextPiece[] {
    return this.#takeAll();
  }

  #firstMatch(): { index: number; trigger: string } | undefined {
    let best: { index: number; trigger: string } | undefined;
    for (const trigger of this.#triggers) {
      const index = this.#pendingText.indexOf(trigger);
      if (index >= 0 && (!best || index < best.index)) best = { index, trigger };
    }
    return best;
  }

  // The length of the longest end of the held text that begins a trigger.
  #longestPrefixSuffix(): number {
    const text = this.#pendingText;
    let longest = 0;
    for (const trigger of this.#triggers) {
      for (let n = Math.min(trigger.length - 1, text.length); n > longest; n--) {
        if (text.endsWith(trigger.slice(0, n))) {
          longest = n;
          break;
        }
      }
    }
    return longest;
  }

  // Releases the held tokens whose text lies wholly before `safe`.
  #releaseBefore(safe: number): TextPiece[] {
    let end = 0;
    let count = 0;
    while (count < this.#pending.length && end + this.#pending[count].text.length <= safe) {
      end += this.#pending[count].text.length;
      count++;
    }
    const released = this.#pending.splice(0, count);
    this.#pendingText = this.#pendingText.slice(end);
    return released;
  }

  // Releases every held token with its text cut at `index` (the trigger's start).
  #clipAt(index: number): TextPiece[] {
    let offset = 0;
    const released = this.#pending.map((piece) => {
      const kept = piece.text.slice(0, Math.max(0, index - offset));
      offset += piece.text.length;
      return { ...piece, text: kept };
    });
    this.#pending = [];
    this.#pendingText = '';
    return released;
  }

  #takeAll(): TextPiece[] {
    const released = this.#pending;
    this.#pending = [];
    this.#pendingText = '';
    return released;
  }
}
