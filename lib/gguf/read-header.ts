// read-header.ts: a GGUF file's metadata and tensor table, read with
// @huggingface/gguf (a maintained parser with limits on counts, string
// lengths and nesting). Only the header is read; the tensor data stays on
// disk for the addon to map.
import { open, stat } from 'node:fs/promises';

import { gguf, type MetadataValue } from '@huggingface/gguf';

import type { NativeTensorEntry } from '../native/contract.js';
import { GgufError } from './gguf-error.js';
import { readStringArray } from './read-string-array.js';
import { turn } from '../generate/event-loop.js';
import { RequestWorker } from '../request-worker.js';
import { compileMerges, type CompiledMerges } from '../tokenizers/bpe-merges.js';
import { PACK_AT_LEAST, packStrings, unpackStringsInSlices, type PackedStrings } from '../tokenizers/packed-strings.js';

// Token texts, read again exactly (see read-string-array.ts).
const TOKENS = 'tokenizer.ggml.tokens';
const MERGES = 'tokenizer.ggml.merges';

export interface GgufHeader {
  path: string;
  fileSize: number;
  metadata: Readonly<Record<string, MetadataValue>>;
  /** Offsets from the start of the file. */
  tensors: NativeTensorEntry[];
  /** Where tensor data begins. */
  dataOffset: number;
  /**
   * A byte-level BPE vocabulary's merges as ids, in place of the metadata's
   * tokenizer.ggml.merges: made on the header's thread (bpe-merges.ts says why).
   */
  bpeMerges?: CompiledMerges;
}

function safeNumber(path: string, field: string, value: bigint | number): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (!Number.isSafeInteger(n) || n < 0) throw new GgufError(path, field, `${value} is not an offset or size this package can address`);
  return n;
}

// Each tensor-table entry takes at least 24 bytes and each metadata entry
// 13 (GGUF v2/v3), so counts the file cannot hold are refused before the
// parser spends time on them.
async function checkCounts(path: string, fileSize: number): Promise<void> {
  const file = await open(path, 'r');
  const head = Buffer.alloc(24);
  try {
    await file.read(head, 0, 24, 0);
  } finally {
    await file.close();
  }
  if (fileSize < 24 || head.toString('latin1', 0, 4) !== 'GGUF') throw new GgufError(path, 'header', 'not a GGUF file (no GGUF magic number)');
  const version = head.readUInt32LE(4);
  if (version !== 2 && version !== 3) throw new GgufError(path, 'header', `GGUF version ${version} is not supported (supported: 2, 3)`);
  const tensors = head.readBigUInt64LE(8),
    entries = head.readBigUInt64LE(16);
  if (tensors * 24n + entries * 13n > BigInt(fileSize)) {
    throw new GgufError(path, 'header', `${tensors} tensors and ${entries} metadata entries cannot fit in ${fileSize} bytes (truncated or corrupt)`);
  }
}

export async function readGgufHeader(path: string): Promise<GgufHeader> {
  let fileSize: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new GgufError(path, 'file', 'not a regular file');
    fileSize = info.size;
  } catch (error) {
    if (error instanceof GgufError) throw error;
    throw new GgufError(path, 'file', `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  await checkCounts(path, fileSize);
  let parsed: Awaited<ReturnType<typeof gguf>>;
  try {
    parsed = await gguf(path, { allowLocalFile: true });
  } catch (error) {
    throw new GgufError(path, 'header', `not a readable GGUF file (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!parsed.littleEndian) throw new GgufError(path, 'header', 'a big-endian GGUF file; only little-endian files are supported');
  // The parser keeps the last of a repeated key (next to its own version,
  // tensor_count and kv_count): fewer keys than entries is a corrupt file,
  // which llama.cpp refuses too.
  const entries = Number(parsed.metadata.kv_count),
    keys = Object.keys(parsed.metadata).length - 3;
  if (keys !== entries)
    throw new GgufError(path, 'header', `${entries} metadata entries but ${keys} distinct keys: a key is repeated (a corrupt file)`);
  const dataOffset = safeNumber(path, 'tensor data offset', parsed.tensorDataOffset);
  if (dataOffset > fileSize)
    throw new GgufError(path, 'header', `the tensor data would start at byte ${dataOffset}, past the end of the ${fileSize}-byte file (truncated?)`);
  const tensors = parsed.tensorInfos.map((t) => ({
    name: t.name,
    type: t.dtype,
    dims: t.shape.map((d, i) => safeNumber(path, `tensor ${t.name} dims[${i}]`, d)),
    offset: dataOffset + safeNumber(path, `tensor ${t.name} offset`, t.offset),
  }));
  const metadata = { ...parsed.metadata } as Record<string, MetadataValue>;
  if (Array.isArray(metadata[TOKENS])) metadata[TOKENS] = (await readStringArray(path, TOKENS, dataOffset)) ?? metadata[TOKENS];
  return { path, fileSize, metadata, tensors, dataOffset };
}

/** A header as it crosses from its thread: the large arrays of its metadata packed (packed-strings.ts says why). */
export interface PackedHeader {
  header: GgufHeader;
  strings: Record<string, PackedStrings>;
  /** Arrays of numbers (token types, scores) as float64, which holds every u32, i32 and f32 exactly. */
  numbers: Record<string, Float64Array>;
}

/**
 * The header with each array of PACK_AT_LEAST or more strings or numbers
 * moved out of its metadata, packed; a byte-level BPE vocabulary's merges
 * made into ids.
 */
export function packHeader(header: GgufHeader): PackedHeader {
  const metadata = { ...header.metadata };
  const tokens = metadata[TOKENS];
  const merges = metadata[MERGES];
  let bpeMerges: CompiledMerges | undefined;
  // Only arrays of strings: readVocabulary() names what else is wrong.
  if (metadata['tokenizer.ggml.model'] === 'gpt2' && isStringArray(tokens) && isStringArray(merges)) {
    bpeMerges = compileMerges(header.path, tokens, merges);
    delete metadata[MERGES];
  }
  const packed: PackedHeader = { header: { ...header, metadata, bpeMerges }, strings: {}, numbers: {} };
  for (const [key, value] of Object.entries(metadata)) {
    if (!Array.isArray(value) || value.length < PACK_AT_LEAST) continue;
    if (value.every((v) => typeof v === 'string')) packed.strings[key] = packStrings(value as string[]);
    else if (value.every((v) => typeof v === 'number')) packed.numbers[key] = Float64Array.from(value as number[]);
    else continue;
    delete metadata[key];
  }
  return packed;
}

function isStringArray(value: MetadataValue | undefined): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** The buffers of a packed header, moved rather than copied. */
export function packedBuffers(packed: PackedHeader): ArrayBuffer[] {
  return [...Object.values(packed.strings).map((p) => p.lengths.buffer), ...Object.values(packed.numbers).map((n) => n.buffer)] as ArrayBuffer[];
}

/** Numbers unpacked between two turns of the event loop. */
const NUMBER_SLICE = 65536;

async function unpackNumbers(packed: Float64Array): Promise<number[]> {
  const numbers = new Array<number>(packed.length);
  for (let i = 0; i < packed.length; i++) {
    if (i % NUMBER_SLICE === NUMBER_SLICE - 1) await turn();
    numbers[i] = packed[i];
  }
  return numbers;
}

let headerWorker: RequestWorker | undefined;

/**
 * readGgufHeader() on a worker thread: the event loop turns while the
 * header is parsed and unpacked. The thread ends when no load is reading a
 * header: the parse leaves a large vocabulary's garbage in its heap,
 * which would stay resident beside the model.
 */
export async function readGgufHeaderOffThread(path: string): Promise<GgufHeader> {
  headerWorker ??= new RequestWorker(
    'gguf/header-worker.js',
    undefined,
    (e) => (e.name === 'GgufError' && e.fields ? new GgufError(e.fields.file, e.fields.field, e.fields.detail) : new Error(e.message)),
    undefined,
    true,
  );
  const { header, strings, numbers } = await headerWorker.request<PackedHeader>({ path });
  const metadata: Record<string, MetadataValue> = { ...header.metadata };
  for (const [key, packed] of Object.entries(strings)) metadata[key] = await unpackStringsInSlices(packed);
  for (const [key, packed] of Object.entries(numbers)) metadata[key] = await unpackNumbers(packed);
  return { ...header, metadata };
}
