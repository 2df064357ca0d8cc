// gguf-writer.ts: writes GGUF v3 files for the tests (and the benchmark's
// random-weight models): metadata, a tensor table and aligned tensor data.
// Small and independent of the reader the package uses, so a bug in one is
// not hidden by the same bug in the other.
import { open } from 'node:fs/promises';

export type GgufValue =
  | { type: 'u32' | 'i32' | 'f32' | 'u64' | 'bool'; value: number | boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: readonly string[] }
  | { type: 'i32s' | 'f32s'; value: ArrayLike<number> };

export interface GgufTensorSpec {
  name: string;
  /** GGUF type id (0 F32, 1 F16, 2 Q4_0, ...). */
  type: number;
  /** ne[0], ne[1]. */
  dims: number[];
  /** The tensor's bytes, or a function that writes them in parts (large files). */
  data: Uint8Array | { bytes: number; write: (sink: (part: Uint8Array) => Promise<void>) => Promise<void> };
}

const ALIGNMENT = 32;
const VALUE_TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10 } as const;

class ByteSink {
  chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case 'u32':
      sink.u32(VALUE_TYPE.u32);
      sink.u32(v.value as number);
      break;
    case 'i32':
      sink.u32(VALUE_TYPE.i32);
      sink.i32(v.value as number);
      break;
    case 'f32':
      sink.u32(VALUE_TYPE.f32);
      sink.f32(v.value as number);
      break;
    case 'u64':
      sink.u32(VALUE_TYPE.u64);
      sink.u64(v.value as number);
      break;
    case 'bool':
      sink.u32(VALUE_TYPE.bool);
      sink.push(Buffer.of(v.value ? 1 : 0));
      break;
    case 'string':
      sink.u32(VALUE_TYPE.string);
      sink.string(v.value);
      break;
    case 'strings':
      sink.u32(VALUE_TYPE.array);
      sink.u32(VALUE_TYPE.string);
      sink.u64(v.value.length);
      for (const s of v.value) sink.string(s);
      break;
    case 'i32s':
    case 'f32s': {
      sink.u32(VALUE_TYPE.array);
      sink.u32(v.type === 'i32s' ? VALUE_TYPE.i32 : VALUE_TYPE.f32);
      sink.u64(v.value.length);
      const b = Buffer.alloc(4 * v.value.length);
      for (let i = 0; i < v.value.length; i++) {
        if (v.type === 'i32s') b.writeInt32LE(v.value[i], 4 * i);
        else b.writeFloatLE(v.value[i], 4 * i);
      }
      sink.push(b);
      break;
    }
  }
}

const padTo = (n: number, a: number) => Math.ceil(n / a) * a;

/** The header bytes (everything before the tensor data) and each tensor's data offset. */
export function ggufHeader(
  metadata: Record<string, GgufValue>,
  tensors: readonly Pick<GgufTensorSpec, 'name' | 'type' | 'dims'>[],
  sizes: readonly number[],
): Buffer {
  const sink = new ByteSink();
  sink.push(Buffer.from('GGUF', 'latin1'));
  sink.u32(3);
  sink.u64(tensors.length);
  sink.u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    sink.string(key);
    writeValue(sink, value);
  }
  let offset = 0;
  tensors.forEach((t, i) => {
    sink.string(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(t.type);
    sink.u64(offset);
    offset = padTo(offset + sizes[i], ALIGNMENT);
  });
  const header = Buffer.concat(sink.chunks);
  return Buffer.concat([header, Buffer.alloc(padTo(header.length, ALIGNMENT) - header.length)]);
}

export async function writeGguf(path: string, metadata: Record<string, GgufValue>, tensors: readonly GgufTensorSpec[]): Promise<void> {
  const sizes = tensors.map((t) => (t.data instanceof Uint8Array ? t.data.length : t.data.bytes));
  const file = await open(path, 'w');
  try {
    let position = 0;
    const put = async (b: Uint8Array) => {
      await file.write(b, 0, b.length, position);
      position += b.length;
    };
    await put(ggufHeader(metadata, tensors, sizes));
    for (const [i, t] of tensors.entries()) {
      if (t.data instanceof Uint8Array) await put(t.data);
      else await t.data.write(put);
      const pad = padTo(sizes[i], ALIGNMENT) - sizes[i];
      if (pad > 0 && i < tensors.length - 1) await put(new Uint8Array(pad));
    }
  } finally {
    await file.close();
  }
}
