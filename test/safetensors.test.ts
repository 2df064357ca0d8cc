// The safetensors reader is as strict as the format's reference
// implementation: the tensors tile the data exactly and no name repeats.
import { describe, expect, it } from 'vitest';

import { parseSafetensors, SafetensorsError } from '../lib/models/safetensors.js';

/** A file with this JSON header text and `data` bytes after it. */
function file(header: string, dataBytes: number): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

const tensor = (begin: number, end: number, shape = [(end - begin) / 2]) => JSON.stringify({ dtype: 'F16', shape, data_offsets: [begin, end] });

describe('parseSafetensors', () => {
  it('reads tensors that tile the data, in any header order, with metadata', () => {
    const bytes = file(`{"__metadata__":{"a":"b"},"b":${tensor(4, 8)},"a":${tensor(0, 4)}}`, 8);
    const tensors = parseSafetensors(bytes);
    expect([...tensors.keys()]).toEqual(['b', 'a']);
    expect(tensors.get('a')!.data.byteLength).toBe(4);
  });

  it.each([
    ['overlapping tensors', `{"a":${tensor(0, 4)},"b":${tensor(2, 6)}}`, 6, 'tensor b: bytes 2..6 overlap the tensor before'],
    ['a gap between tensors', `{"a":${tensor(0, 2)},"b":${tensor(4, 6)}}`, 6, 'tensor b: bytes 2..4 before it belong to no tensor'],
    ['a gap before the first', `{"a":${tensor(2, 4)}}`, 4, 'tensor a: bytes 0..2 before it belong to no tensor'],
    ['trailing bytes', `{"a":${tensor(0, 4)}}`, 6, 'bytes 4..6 after the last tensor belong to no tensor'],
    ['a name twice', `{"a":${tensor(0, 4)},"a":${tensor(0, 4)}}`, 4, 'the header names "a" twice'],
    ['a name twice, escaped', `{"a":${tensor(0, 4)},"\\u0061":${tensor(0, 4)}}`, 4, 'the header names "a" twice'],
    [
      'a shape whose size wraps',
      `{"a":${JSON.stringify({ dtype: 'F16', shape: [2 ** 52, 2 ** 12], data_offsets: [0, 0] })}}`,
      0,
      'tensor a: shape [4503599627370496, 4096] of F16 needs 36893488147419103232 bytes, the offsets give 0',
    ],
    ['a header length past the file', null, 0, 'the header length 18446744073709551615 is past the end of the 8-byte file'],
  ])('refuses %s', (_what, header, data, message) => {
    let bytes: Uint8Array;
    if (header === null) {
      bytes = new Uint8Array(8);
      new DataView(bytes.buffer).setBigUint64(0, 2n ** 64n - 1n, true);
    } else {
      bytes = file(header, data);
    }
    expect(() => parseSafetensors(bytes)).toThrow(new SafetensorsError(message));
  });

  it('keys inside tensors do not count as duplicates of top-level names', () => {
    const bytes = file(`{"dtype":${tensor(0, 2)},"shape":${tensor(2, 4)}}`, 4);
    expect([...parseSafetensors(bytes).keys()]).toEqual(['dtype', 'shape']);
  });
});
