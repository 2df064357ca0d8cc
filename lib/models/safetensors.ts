// safetensors.ts: reading and writing the safetensors format (8-byte
// little-endian header length, a JSON header, then the tensor bytes).
// Written here because no maintained npm package parses local files: the
// `safetensors` package is an abandoned 0.0.1, and @huggingface/hub parses
// only files on the Hub. The format is small; this reader checks all of it.

export interface SafetensorsTensor {
  dtype: string;
  shape: number[];
  /** A view of the file's bytes. */
  data: Uint8Array;
}

const DTYPE_BYTES: Record<string, number> = {
  BOOL: 1, U8: 1, I8: 1, F8_E4M3: 1, F8_E5M2: 1, I16: 2, U16: 2, F16: 2, BF16: 2,
  I32: 4, U32: 4, F32: 4, I64: 8, U64: 8, F64: 8,
};

/** Thrown for a file that is not valid safetensors; the message says where. */
export class SafetensorsError extends Error {
  readonly code = 'ERR_MD_SAFETENSORS';
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

/** The tensors of a safetensors file (views into `bytes`), by name. */
export function parseSafetensors(bytes: Uint8Array): Map<string, SafetensorsTensor> {
  if (bytes.byteLength < 8) throw new SafetensorsError(`${bytes.byteLength} bytes is too short for a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > bytes.byteLength - 8) {
    throw new SafetensorsError(`the header length ${headerLength} is past the end of the ${bytes.byteLength}-byte file`);
  }
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLength)));
  } catch (error) {
    throw new SafetensorsError(`the header is not UTF-8 JSON: ${(error as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new SafetensorsError('the header is not a JSON object');
  const dataStart = 8 + headerLength;
  const dataLength = bytes.byteLength - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') continue;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) throw new SafetensorsError(`tensor ${name}: not an object`);
    if (typeof e.dtype !== 'string' || !(e.dtype in DTYPE_BYTES)) throw new SafetensorsError(`tensor ${name}: unknown dtype ${JSON.stringify(e.dtype)}`);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(`tensor ${name}: shape must be an array of non-negative integers`);
    }
    const offsets = e.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0) || offsets[0] > offsets[1]) {
      throw new SafetensorsError(`tensor ${name}: data_offsets must be [begin, end] with begin <= end`);
    }
    const [begin, end] = offsets as [number, number];
    if (end > dataLength) throw new SafetensorsError(`tensor ${name}: bytes ${begin}..${end} are past the end of the ${dataLength} data bytes`);
    const elements = (e.shape as number[]).reduce((a, b) => a * b, 1);
    if (elements * DTYPE_BYTES[e.dtype] !== end - begin) {
      throw new SafetensorsError(`tensor ${name}: shape [${e.shape.join(', ')}] of ${e.dtype} needs ${elements * DTYPE_BYTES[e.dtype]} bytes, the offsets give ${end - begin}`);
    }
    tensors.set(name, { dtype: e.dtype, shape: e.shape as number[], data: bytes.subarray(dataStart + begin, dataStart + end) });
  }
  return tensors;
}

/** A safetensors file holding `tensors`, in the order given. */
export function serializeSafetensors(tensors: Record<string, { dtype: string; shape: number[]; data: ArrayBufferView }>): Uint8Array {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);  // the data starts 8-byte aligned
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.byteLength;
  for (const t of Object.values(tensors)) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    at += t.data.byteLength;
  }
  return out;
}
