// kv-cache-type.ts: the KV cache's types, as llama.cpp's cache types
// (type_k and type_v): 'f16' (the default, as llama.cpp's), 'f32' (exact
// attention: no rounding of K, V, the query or the softmax weights) and
// 'q8_0' (half the memory of f16: blocks of 32 values, so each head must
// be whole blocks, as llama.cpp's cache views need). The bytes of a type
// come from the addon's tensor types, the one definition of each block.
import { freemem, totalmem } from 'node:os';

import { invalidParameterError } from '../errors.js';
import type { NativeModelConfig, NativeTensorType } from '../native/contract.js';

export type KvCacheType = 'f16' | 'f32' | 'q8_0';
export const KV_CACHE_TYPES: readonly KvCacheType[] = ['f16', 'f32', 'q8_0'];

/** The GGUF tensor type of a cache row (the addon's tensorTypes name; the native sequence takes its id). */
export function kvCacheTensorType(type: KvCacheType, types: readonly NativeTensorType[]): NativeTensorType {
  const name = type.toUpperCase();
  const found = types.find((t) => t.name === name);
  if (found === undefined) throw new Error(`the addon has no tensor type ${name}`);
  return found;
}

/** Bytes of `values` values (a whole number of blocks) in the cache type. */
export function kvCacheBytes(type: KvCacheType, types: readonly NativeTensorType[], values: number): number {
  const t = kvCacheTensorType(type, types);
  return (values / t.blockValues) * t.blockBytes;
}

/** A valid type checked against a model's head dimension: a RangeError naming kvCacheType. */
export function checkKvCacheType(value: KvCacheType, headDim: number): void {
  if (value === 'q8_0' && headDim % 32 !== 0) {
    throw invalidParameterError(
      'kvCacheType',
      `'f16' or 'f32' for this model ('q8_0' stores each head as 32-value blocks, and its head dimension is ${headDim})`,
      value,
      'range',
    );
  }
}

/** The KV caches already held beside the ones being checked: their bytes, and how many sequences hold them. */
export interface HeldKvCaches {
  bytes: number;
  sequences: number;
}

/**
 * The bytes of `count` sequences' K and V caches (every layer, contextSize
 * positions each); a RangeError naming contextSize when they are more than
 * this machine's memory, less what the `held` caches of other sequences
 * take, before anything is allocated.
 */
export function checkKvCacheFits(
  config: NativeModelConfig,
  type: KvCacheType,
  types: readonly NativeTensorType[],
  contextSize: number,
  memory = totalmem(),
  held: HeldKvCaches = { bytes: 0, sequences: 0 },
  count = 1,
): number {
  const perSequence = 2 * config.blockCount * contextSize * kvCacheBytes(type, types, config.headCountKv * config.headDim);
  const bytes = count * perSequence;
  const left = memory - held.bytes;
  if (bytes > left) {
    const perPosition = bytes / contextSize;
    const caches = count === 1 ? `the ${type} KV cache` : `the ${type} KV caches of ${count} sequences`;
    const room =
      held.sequences === 0
        ? `this machine's ${memory} bytes of memory`
        : `the ${Math.max(0, left)} bytes of this machine's ${memory} left beside the ${held.bytes} bytes the model's ${held.sequences} open sequences hold`;
    throw invalidParameterError(
      'contextSize',
      `at most ${Math.floor(Math.max(0, left) / perPosition)} positions: ${caches} for ${contextSize} positions ` +
        `is ${bytes} bytes, more than ${room}`,
      contextSize,
      'range',
    );
  }
  return bytes;
}

/**
 * contextSize 'auto' for a model: the context it was trained with, or as
 * many positions as fit in half of the memory free now when that is less
 * (a multiple of 256, at least 256), as node-llama-cpp's 'auto' adapts to
 * free memory. `reason` says which.
 */
export function autoContextSize(
  config: NativeModelConfig,
  type: KvCacheType,
  types: readonly NativeTensorType[],
  trained: number | undefined,
  free = freemem(),
): { contextSize: number; reason: string } {
  const perPosition = 2 * config.blockCount * kvCacheBytes(type, types, config.headCountKv * config.headDim);
  const fits = Math.max(256, Math.floor(free / 2 / perPosition / 256) * 256);
  const wanted = trained ?? 4096;
  const source = trained === undefined ? 'the default 4096 (the file has no context_length)' : `the trained context length ${trained}`;
  if (wanted <= fits) return { contextSize: wanted, reason: `${source}, which fits in half of the ${free} bytes of free memory` };
  return { contextSize: fits, reason: `${fits} positions: the most that fit in half of the ${free} bytes of free memory (${source} does not)` };
}
