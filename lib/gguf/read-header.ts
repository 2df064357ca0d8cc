// read-header.ts: a GGUF file's metadata and tensor table, read with
// @huggingface/gguf (a maintained parser with limits on counts, string
// lengths and nesting). Only the header is read; the tensor data stays on
// disk for the addon to map.
import { stat } from 'node:fs/promises';

import { gguf, type MetadataValue } from '@huggingface/gguf';

import type { NativeTensorEntry } from '../native/contract.js';
import { GgufError } from './gguf-error.js';

export interface GgufHeader {
  path: string;
  fileSize: number;
  metadata: Readonly<Record<string, MetadataValue>>;
  /** Offsets from the start of the file. */
  tensors: NativeTensorEntry[];
  /** Where tensor data begins. */
  dataOffset: number;
}

function safeNumber(path: string, field: string, value: bigint | number): number {
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (!Number.isSafeInteger(n) || n < 0) throw new GgufError(path, field, `${value} is not an offset or size this package can address`);
  return n;
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
  let parsed: Awaited<ReturnType<typeof gguf>>;
  try {
    parsed = await gguf(path, { allowLocalFile: true });
  } catch (error) {
    throw new GgufError(path, 'header', `not a readable GGUF file (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!parsed.littleEndian) throw new GgufError(path, 'header', 'a big-endian GGUF file; only little-endian files are supported');
  const dataOffset = safeNumber(path, 'tensor data offset', parsed.tensorDataOffset);
  if (dataOffset > fileSize) throw new GgufError(path, 'header', `the tensor data would start at byte ${dataOffset}, past the end of the ${fileSize}-byte file (truncated?)`);
  const tensors = parsed.tensorInfos.map((t) => ({
    name: t.name,
    type: t.dtype,
    dims: t.shape.map((d, i) => safeNumber(path, `tensor ${t.name} dims[${i}]`, d)),
    offset: dataOffset + safeNumber(path, `tensor ${t.name} offset`, t.offset),
  }));
  return { path, fileSize, metadata: parsed.metadata as Record<string, MetadataValue>, tensors, dataOffset };
}
