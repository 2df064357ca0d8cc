// read-string-array.ts: one string array of a GGUF file's metadata, read
// again with its exact text. @huggingface/gguf decodes strings with a
// default TextDecoder, which drops a leading U+FEFF, so a vocabulary's
// byte-order-mark token would read as empty; this walks the metadata
// (already checked by that parser) and decodes the one array keeping it.
import { open } from 'node:fs/promises';

import { GgufError } from './gguf-error.js';

// Bytes of each scalar metadata type, by GGUF type id (8 string, 9 array).
const SCALAR_BYTES: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8,
  ARRAY = 9;
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** The strings of metadata array `key`, from a file whose metadata ends before `metadataEnd`; undefined when absent. */
export async function readStringArray(path: string, key: string, metadataEnd: number): Promise<string[] | undefined> {
  const file = await open(path, 'r');
  const bytes = Buffer.alloc(metadataEnd);
  try {
    await file.read(bytes, 0, metadataEnd, 0);
  } finally {
    await file.close();
  }
  try {
    return findStringArray(bytes, key);
  } catch (error) {
    if (error instanceof RangeError) throw new GgufError(path, key, 'the metadata runs past the start of the tensor data');
    throw error;
  }
}

function findStringArray(bytes: Buffer, wanted: string): string[] | undefined {
  let at = 16;
  const count = Number(bytes.readBigUInt64LE(at));
  at += 8;
  const u64 = () => {
    const n = Number(bytes.readBigUInt64LE(at));
    at += 8;
    if (n > bytes.length - at) throw new RangeError('past the end');
    return n;
  };
  const u32 = () => {
    const n = bytes.readUInt32LE(at);
    at += 4;
    return n;
  };
  const string = () => {
    const length = u64();
    const text = UTF8.decode(bytes.subarray(at, at + length));
    at += length;
    return text;
  };
  const skip = (type: number): void => {
    if (type === STRING) {
      const length = u64(); // not `at += u64()`: that adds to `at` as it was before the read
      at += length;
    } else if (type === ARRAY) {
      const elementType = u32();
      const n = u64();
      if (elementType in SCALAR_BYTES) at += n * SCALAR_BYTES[elementType];
      else for (let i = 0; i < n; i++) skip(elementType);
    } else if (type in SCALAR_BYTES) {
      at += SCALAR_BYTES[type];
    } else {
      throw new RangeError(`metadata type ${type}`);
    }
    if (at > bytes.length) throw new RangeError('past the end');
  };
  for (let i = 0; i < count; i++) {
    const key = string();
    const type = u32();
    if (key === wanted && type === ARRAY && bytes.readUInt32LE(at) === STRING) {
      at += 4;
      const n = u64();
      return Array.from({ length: n }, string);
    }
    skip(type);
  }
  return undefined;
}
