// convert-model.ts: a GGUF file of F32 weights rewritten with its matrices
// in another type, as llama.cpp's quantizer would make it: the metadata
// bytes copied as they are (every key keeps its GGUF type), the vectors
// (norms) kept F32, each matrix converted to the target type when its rows
// are a whole number of the type's blocks, else to the type llama.cpp falls
// back to (Q4_K rows that are not whole 256-value super-blocks: Q5_0; then
// F16 for rows that are not whole 32-value blocks either). The quantizers
// are ggml's reference ones (quantize_row_*_ref), written here from their
// definition; the tests compare metal-decode with llama.cpp on the
// converted file, so what matters is that both read the same bytes.
import { readFileSync, writeFileSync } from 'node:fs';

import { float16FromNumber } from '../../lib/float16.js';
import { BLOCK, TYPE, type TypeName } from './dequantize.js';

/** The targets this converter writes (Q4_K only where it falls back: no stories260K row is whole super-blocks). */
export type ConvertTarget = 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q5_0' | 'Q4_K';

export interface ConvertedTensor {
  name: string;
  dims: number[];
  type: TypeName;
}

/** Writes `from` (every tensor F32) to `to` with its matrices in `target`; returns each tensor's type. */
export function convertModel(from: string, to: string, target: ConvertTarget): ConvertedTensor[] {
  const file = readFileSync(from);
  const layout = readLayout(file, from);
  const tensors = layout.tensors.map((t) => {
    if (t.type !== TYPE.F32) throw new Error(`${from}: ${t.name} is type ${t.type}; the converter reads F32 files`);
    const values = new Float32Array(
      file.buffer.slice(file.byteOffset + layout.dataOffset + t.offset, file.byteOffset + layout.dataOffset + t.offset + 4 * count(t.dims)),
    );
    const type = t.dims.length < 2 ? 'F32' : typeFor(target, t.dims[0]);
    return { name: t.name, dims: t.dims, type, data: encode(type, values) };
  });
  // Header: the original up to the end of the metadata, then a new tensor table.
  const parts: Buffer[] = [file.subarray(0, layout.metadataEnd)];
  let offset = 0;
  for (const t of tensors) {
    const name = Buffer.from(t.name, 'utf8');
    const entry = Buffer.alloc(8 + name.length + 4 + 8 * t.dims.length + 4 + 8);
    let at = entry.writeBigUInt64LE(BigInt(name.length), 0);
    at += name.copy(entry, at);
    at = entry.writeUInt32LE(t.dims.length, at);
    for (const d of t.dims) at = entry.writeBigUInt64LE(BigInt(d), at);
    at = entry.writeUInt32LE(TYPE[t.type], at);
    entry.writeBigUInt64LE(BigInt(offset), at);
    parts.push(entry);
    offset = padTo(offset + t.data.length, layout.alignment);
  }
  const header = Buffer.concat(parts);
  const out = [header, Buffer.alloc(padTo(header.length, layout.alignment) - header.length)];
  for (const t of tensors) out.push(Buffer.from(t.data), Buffer.alloc(padTo(t.data.length, layout.alignment) - t.data.length));
  writeFileSync(to, Buffer.concat(out));
  return tensors.map(({ name, dims, type }) => ({ name, dims, type }));
}

/** The type a matrix with rows of `cols` values gets: the target, or llama.cpp's fallback. */
export function typeFor(target: ConvertTarget, cols: number): TypeName {
  let type: TypeName = target;
  if (cols % BLOCK[type][0] !== 0 && type === 'Q4_K') type = 'Q5_0';
  if (cols % BLOCK[type][0] !== 0) type = 'F16';
  return type;
}

function encode(type: TypeName, x: Float32Array): Uint8Array {
  if (type === 'F32') return new Uint8Array(x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength));
  const [per, size] = BLOCK[type];
  const out = new Uint8Array((x.length / per) * size);
  const view = new DataView(out.buffer);
  for (let blk = 0; blk < x.length / per; blk++) {
    const v = x.subarray(blk * per, blk * per + per),
      p = blk * size;
    switch (type) {
      case 'F16':
        view.setUint16(p, float16FromNumber(v[0]), true);
        break;
      case 'BF16':
        view.setUint16(p, bf16FromNumber(v[0]), true);
        break;
      case 'Q8_0':
        quantizeQ8_0(v, view, p);
        break;
      case 'Q4_0':
        quantizeQ4_0(v, view, p);
        break;
      case 'Q5_0':
        quantizeQ5_0(v, view, p);
        break;
      default:
        throw new Error(`convertModel: no quantizer for ${type} (rows whole ${type} blocks are not in the files this converts)`);
    }
  }
  return out;
}

// quantize_row_q8_0_ref: d = max |x| / 127, q = round(x / d).
function quantizeQ8_0(x: Float32Array, view: DataView, p: number): void {
  let amax = 0;
  for (const v of x) amax = Math.max(amax, Math.abs(v));
  const d = Math.fround(amax / 127),
    id = d !== 0 ? Math.fround(1 / d) : 0;
  view.setUint16(p, float16FromNumber(d), true);
  for (let j = 0; j < 32; j++) view.setInt8(p + 2 + j, roundAway(Math.fround(x[j] * id)));
}

// quantize_row_q4_0_ref: the value of largest magnitude maps to -8, d = it / -8,
// q = min(15, trunc(x / d + 8.5)); values j and j + 16 share byte j.
function quantizeQ4_0(x: Float32Array, view: DataView, p: number): void {
  const d = Math.fround(signedMax(x) / -8),
    id = d !== 0 ? Math.fround(1 / d) : 0;
  view.setUint16(p, float16FromNumber(d), true);
  for (let j = 0; j < 16; j++) {
    const lo = Math.min(15, Math.trunc(Math.fround(Math.fround(x[j] * id) + 8.5)));
    const hi = Math.min(15, Math.trunc(Math.fround(Math.fround(x[j + 16] * id) + 8.5)));
    view.setUint8(p + 2 + j, lo | (hi << 4));
  }
}

// quantize_row_q5_0_ref: as Q4_0 with -16 and 31, the fifth bits in qh.
function quantizeQ5_0(x: Float32Array, view: DataView, p: number): void {
  const d = Math.fround(signedMax(x) / -16),
    id = d !== 0 ? Math.fround(1 / d) : 0;
  view.setUint16(p, float16FromNumber(d), true);
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    const lo = Math.min(31, Math.trunc(Math.fround(Math.fround(x[j] * id) + 16.5)));
    const hi = Math.min(31, Math.trunc(Math.fround(Math.fround(x[j + 16] * id) + 16.5)));
    view.setUint8(p + 6 + j, (lo & 0xf) | ((hi & 0xf) << 4));
    qh |= ((lo >> 4) & 1) << j;
    qh |= ((hi >> 4) & 1) << (j + 16);
  }
  view.setUint32(p + 2, qh >>> 0, true);
}

// The value of largest magnitude, with its sign (the first among equals).
function signedMax(x: Float32Array): number {
  let amax = 0,
    max = 0;
  for (const v of x)
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  return max;
}

// roundf: halves away from zero.
const roundAway = (v: number) => Math.sign(v) * Math.round(Math.abs(v));

function bf16FromNumber(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

const padTo = (n: number, a: number) => Math.ceil(n / a) * a;
const count = (dims: number[]) => dims.reduce((a, b) => a * b, 1);

interface Layout {
  metadataEnd: number;
  alignment: number;
  dataOffset: number;
  tensors: { name: string; dims: number[]; type: number; offset: number }[];
}

// Where a GGUF v2/v3 file's metadata ends, its tensor table, its alignment.
function readLayout(b: Buffer, path: string): Layout {
  if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${path}: not a GGUF file`);
  const tensorCount = Number(b.readBigUInt64LE(8)),
    entries = Number(b.readBigUInt64LE(16));
  let at = 24,
    alignment = 32;
  const string = () => {
    const n = Number(b.readBigUInt64LE(at));
    const s = b.toString('utf8', at + 8, at + 8 + n);
    at += 8 + n;
    return s;
  };
  const SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skipValue = (type: number): number | undefined => {
    if (type === 8) {
      string();
      return undefined;
    }
    if (type === 9) {
      const inner = b.readUInt32LE(at),
        n = Number(b.readBigUInt64LE(at + 4));
      at += 12;
      for (let i = 0; i < n; i++) skipValue(inner);
      return undefined;
    }
    const size = SIZES[type];
    if (size === undefined) throw new Error(`${path}: metadata value type ${type} unknown`);
    const value = size === 4 ? b.readUInt32LE(at) : undefined;
    at += size;
    return value;
  };
  for (let i = 0; i < entries; i++) {
    const key = string();
    const type = b.readUInt32LE(at);
    at += 4;
    const value = skipValue(type);
    if (key === 'general.alignment' && value !== undefined) alignment = value;
  }
  const metadataEnd = at;
  const tensors: Layout['tensors'] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = string();
    const nDims = b.readUInt32LE(at);
    at += 4;
    const dims = Array.from({ length: nDims }, (_, d) => Number(b.readBigUInt64LE(at + 8 * d)));
    at += 8 * nDims;
    const type = b.readUInt32LE(at),
      offset = Number(b.readBigUInt64LE(at + 4));
    at += 12;
    tensors.push({ name, dims, type, offset });
  }
  return { metadataEnd, alignment, dataOffset: padTo(at, alignment), tensors };
}
