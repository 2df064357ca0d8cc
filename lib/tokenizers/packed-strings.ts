// packed-strings.ts: a large array of strings (a vocabulary's tokens, its
// merges) as one string and the lengths of its parts, for crossing between
// threads. Node copies one string of 2 MB in a memcpy; an array of 150,000
// strings it serializes one by one, and the receiving thread builds 150,000
// objects in one piece (about 60 ms on the main thread, measured). The
// header's thread packs; the main thread unpacks in slices between turns
// of the event loop, and remembers the packed form so the encoder's thread
// gets it too, without the main thread serializing the array again.

import { turn } from '../generate/event-loop.js';

export interface PackedStrings {
  text: string;
  lengths: Uint32Array;
}

/** Arrays at least this long cross threads packed. */
export const PACK_AT_LEAST = 4096;

/** Strings unpacked between two turns of the event loop. */
const UNPACK_SLICE = 32768;

const packedForms = new WeakMap<readonly string[], PackedStrings>();

export function packStrings(strings: readonly string[]): PackedStrings {
  return { text: strings.join(''), lengths: Uint32Array.from(strings, (s) => s.length) };
}

/** The strings (slices of the one text, which they keep alive), in one piece: for a worker thread. */
export function unpackStrings(packed: PackedStrings): string[] {
  const strings = new Array<string>(packed.lengths.length);
  for (let i = 0, at = 0; i < strings.length; i++) strings[i] = packed.text.substring(at, (at += packed.lengths[i]));
  packedForms.set(strings, packed);
  return strings;
}

/** unpackStrings() on the main thread: the event loop turns between slices. */
export async function unpackStringsInSlices(packed: PackedStrings): Promise<string[]> {
  const strings = new Array<string>(packed.lengths.length);
  for (let i = 0, at = 0; i < strings.length; i++) {
    if (i % UNPACK_SLICE === UNPACK_SLICE - 1) await turn();
    strings[i] = packed.text.substring(at, (at += packed.lengths[i]));
  }
  packedForms.set(strings, packed);
  return strings;
}

/** The packed form `strings` were unpacked from, when they were; to hand them to another thread as they came. */
export function packedFormOf(strings: readonly string[] | undefined): PackedStrings | undefined {
  return strings && packedForms.get(strings);
}
