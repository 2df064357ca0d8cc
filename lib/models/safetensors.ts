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
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

/** Thrown for a file that is not valid safetensors; the message says where. */
export class SafetensorsError extends Error {
  readonly code = 'ERR_MD_SAFETENSORS';
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

/**
 * The tensors of a safetensors file (views into `bytes`), by name. As
 * strict as the format's reference implementation: the tensors' byte
 * ranges tile the data exactly (no overlap, no gap, no trailing bytes), and
 * no name appears twice.
 */
export function parseSafetensors(bytes: Uint8Array): Map<string, SafetensorsTensor> {
  if (bytes.byteLength < 8) throw new SafetensorsError(`${bytes.byteLength} bytes is too short for a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const declared = view.getBigUint64(0, true);
  if (declared > BigInt(bytes.byteLength - 8)) {
    throw new SafetensorsError(`the header length ${declared} is past the end of the ${bytes.byteLength}-byte file`);
  }
  const headerLength = Number(declared);
  let text: string;
  let header: unknown;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLength));
    header = JSON.parse(text);
  } catch (error) {
    throw new SafetensorsError(`the header is not UTF-8 JSON: ${(error as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new SafetensorsError('the header is not a JSON object');
  const duplicate = firstDuplicateTopLevelKey(text);
  if (duplicate !== undefined) throw new SafetensorsError(`the header names ${JSON.stringify(duplicate)} twice`);
  const dataStart = 8 + headerLength;
  const dataLength = bytes.byteLength - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  const ranges: { name: string; begin: number; end: number }[] = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') continue;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) throw new SafetensorsError(`tensor ${name}: not an object`);
    if (typeof e.dtype !== 'string' || !(e.dtype in DTYPE_BYTES))
      throw new SafetensorsError(`tensor ${name}: unknown dtype ${JSON.stringify(e.dtype)}`);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError(`tensor ${name}: shape must be an array of non-negative integers`);
    }
    const offsets = e.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) || offsets[0] > offsets[1]) {
      throw new SafetensorsError(`tensor ${name}: data_offsets must be [begin, end] with begin <= end`);
    }
    const [begin, end] = offsets as [number, number];
    if (end > dataLength) throw new SafetensorsError(`tensor ${name}: bytes ${begin}..${end} are past the end of the ${dataLength} data bytes`);
    // In BigInt: a hostile shape must not wrap around into a match.
    const needed = (e.shape as number[]).reduce((a, b) => a * BigInt(b), 1n) * BigInt(DTYPE_BYTES[e.dtype]);
    if (needed !== BigInt(end - begin)) {
      throw new SafetensorsError(
        `tensor ${name}: shape [${e.shape.join(', ')}] of ${e.dtype} needs ${needed} bytes, the offsets give ${end - begin}`,
      );
    }
    ranges.push({ name, begin, end });
    tensors.set(name, { dtype: e.dtype, shape: e.shape as number[], data: bytes.subarray(dataStart + begin, dataStart + end) });
  }
  // The ranges, in order, must cover the data exactly.
  ranges.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let covered = 0;
  for (const r of ranges) {
    if (r.begin < covered) throw new SafetensorsError(`tensor ${r.name}: bytes ${r.begin}..${r.end} overlap the tensor before`);
    if (r.begin > covered) throw new SafetensorsError(`tensor ${r.name}: bytes ${covered}..${r.begin} before it belong to no tensor`);
    covered = r.end;
  }
  if (covered !== dataLength) throw new SafetensorsError(`bytes ${covered}..${dataLength} after the last tensor belong to no tensor`);
  return tensors;
}

// JSON.parse keeps the last of two equal keys silently; the format's
// reference implementation refuses them. This scans the top-level object's
// keys: strings at depth 1 followed by a colon.
function firstDuplicateTopLevelKey(json: string): string | undefined {
  const seen = new Set<string>();
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      if (depth === 1 && /^\s*:/.test(json.slice(j + 1, j + 16))) {
        const key = JSON.parse(json.slice(i, j + 1)) as string;
        if (seen.has(key)) return key;
        seen.add(key);
      }
      i = j;
    }
  }
  return undefined;
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
  json += ' '.repeat((8 - (json.length % 8)) % 8); // the data starts 8-byte aligned
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
