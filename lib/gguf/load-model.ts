// load-model.ts: loadModel(path, options): a GGUF file to a GgufModel.
// The header is parsed in JavaScript; every problem with the file is a
// GgufError naming it and the field, found before any weight is touched.
// Then the addon maps the file and the pages are read in ahead of the
// first token, in chunks, with progress and an AbortSignal between them.
import { GGMLQuantizationType } from '@huggingface/gguf';

import { AbortError, BackendUnavailableError, integerInRange, invalidParameterError } from '../errors.js';
import { checkKnownKeys } from '../sampling-options.js';
import { ByteTokenizer } from '../generate/byte-tokenizer.js';
import { turn } from '../generate/event-loop.js';
import { GgufModel } from '../models/gguf-model.js';
import { PREFILL_CHUNK } from '../models/sequence-batcher.js';
import { ChatTemplate } from '../tokenizers/chat-template.js';
import { endOfGenerationTokens } from '../tokenizers/gguf-vocabulary.js';
import type { NativeAddon, NativeModelConfig, NativeTransformer } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';
import { openSharedAsync } from '../gpu/shared-devices.js';
import { isPlainObject } from '../predicates.js';
import { ggufKeyOf, readConfig, trainedContextLength, type Architecture } from './architecture.js';
import { ARCHITECTURES } from './architectures/index.js';
import { GgufError, unsupportedValue } from './gguf-error.js';
import { checkKvCacheType, KV_CACHE_TYPES, type KvCacheType } from '../models/kv-cache-type.js';
import { physicalCores } from './physical-cores.js';
import { readGgufHeaderOffThread, type GgufHeader } from './read-header.js';
import { GgufTokenizer } from './gguf-tokenizer.js';

export interface LoadModelOptions {
  /** Threads of the forward pass. Default: the number of physical cores. */
  threads?: number;
  /** Stops loading; loadModel then rejects with an AbortError. */
  signal?: AbortSignal;
  /** Called with the fraction of the weights read into memory, from 0 to 1. */
  onLoadProgress?: (progress: number) => void;
  /**
   * Read every weight page in while loading (default true), so the first
   * tokens do not wait on the disk. false maps the file and returns at once.
   */
  prefetch?: boolean;
  /** Tokens per prefill batch; longer prompts run in several. Default 512. */
  batchSize?: number;
  /**
   * The dot-product kernels: 'auto' (default: the best this CPU has), or one
   * by name ('amx' (AVX-512 with AMX for batches), 'avx512', 'avx-vnni' and
   * 'avx2' on x86-64, 'neon-i8mm' (Apple M2 and later) and 'neon' on
   * arm64, 'accelerate' on macOS (the best NEON kernels, with float
   * weights' prompts of 32 tokens or more on Accelerate's matrix multiply,
   * as llama.cpp's Mac build; auto's pick there), 'portable' anywhere); a
   * name this CPU or build cannot run is a RangeError.
   */
  cpuKernels?: CpuKernels;
  /**
   * Only the vocabulary (node-llama-cpp's option): the tokenizer, chat
   * template, end-of-generation tokens and metadata, with no weights bound
   * and nothing mapped. For tools that only tokenize; openSequence() (and
   * so generation) is then an error that says so. Default false.
   */
  vocabOnly?: boolean;
  /**
   * The KV cache's type for the sequences of this model, on the CPU and the
   * GPU tables, as llama.cpp's cache types: 'f16' (default), 'f32' (exact
   * attention: K, V, the query and the softmax weights never rounded;
   * twice the memory) or 'q8_0' (about half of f16's; the head dimension
   * must be a multiple of 32).
   */
  kvCacheType?: KvCacheType;
  /**
   * The most sequences (Sessions, ChatSessions, generate() calls, server
   * slots) open at once on this model, as node-llama-cpp's context
   * `sequences`; one more is a RangeError that says so. Default: as many as
   * the memory holds (each sequence's KV cache is checked against what the
   * open ones leave).
   */
  maxSequences?: number;
  /**
   * Tokens of a prompt evaluated at a time while other sequences of the
   * model decode on the CPU, a pass of their steps between two chunks
   * (chunked prefill). Default 32: larger gives the newcomer its first
   * token sooner, smaller keeps the other streams' gaps shorter. A prompt
   * with no one else decoding runs whole.
   */
  prefillChunk?: number;
  /**
   * The CPU's kernels read Q4_0, Q8_0, Q4_K, Q5_K and Q6_K matrices
   * repacked in groups of 8 rows, one row per vector lane, as llama.cpp's
   * CPU backend repacks them (on CPUs whose kernels have such tiles: AVX2,
   * AVX-VNNI, AVX-512 without AMX; Q8_0 only with VNNI). The copy is made
   * while loading, on the model's thread; the mapped pages of the matrices
   * are let go, so memory stays the file's (Q4_K and Q5_K take 2-3% more:
   * their 6-bit scales are unpacked to bytes). `info.repackedBytes` says
   * how much was copied. Default true; false keeps every weight in the
   * mapped file, read in place.
   */
  repack?: boolean;
}

export type CpuKernels = 'auto' | 'amx' | 'avx512' | 'avx-vnni' | 'avx2' | 'accelerate' | 'neon-i8mm' | 'neon' | 'portable';
const CPU_KERNELS: readonly CpuKernels[] = ['auto', 'amx', 'avx512', 'avx-vnni', 'avx2', 'accelerate', 'neon-i8mm', 'neon', 'portable'];
const OPTION_NAMES = new Set([
  'threads',
  'signal',
  'onLoadProgress',
  'prefetch',
  'batchSize',
  'cpuKernels',
  'vocabOnly',
  'kvCacheType',
  'maxSequences',
  'prefillChunk',
  'repack',
]);
const PREFETCH_CHUNK = 64 << 20;

function checkOptions(
  options: unknown,
): Required<Omit<LoadModelOptions, 'signal' | 'onLoadProgress' | 'maxSequences'>> &
  Pick<LoadModelOptions, 'signal' | 'onLoadProgress' | 'maxSequences'> {
  if (!isPlainObject(options)) throw invalidParameterError('options', 'an object', options, 'type');
  checkKnownKeys(options, OPTION_NAMES, '');
  const o = options as LoadModelOptions;
  const threads = o.threads === undefined ? physicalCores() : integerInRange('threads', o.threads, 1, 256);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw invalidParameterError('signal', 'an AbortSignal', o.signal, 'type');
  if (o.onLoadProgress !== undefined && typeof o.onLoadProgress !== 'function')
    throw invalidParameterError('onLoadProgress', 'a function (progress) => void', o.onLoadProgress, 'type');
  if (o.prefetch !== undefined && typeof o.prefetch !== 'boolean') throw invalidParameterError('prefetch', 'a boolean', o.prefetch, 'type');
  const batchSize = o.batchSize === undefined ? 512 : integerInRange('batchSize', o.batchSize, 1, 65536);
  const cpuKernels = o.cpuKernels ?? 'auto';
  if (!CPU_KERNELS.includes(cpuKernels)) throw invalidParameterError('cpuKernels', CPU_KERNELS.map((k) => `'${k}'`).join(', '), cpuKernels, 'range');
  if (o.vocabOnly !== undefined && typeof o.vocabOnly !== 'boolean') throw invalidParameterError('vocabOnly', 'a boolean', o.vocabOnly, 'type');
  const kvCacheType = o.kvCacheType ?? 'f16';
  if (!KV_CACHE_TYPES.includes(kvCacheType)) {
    throw invalidParameterError(
      'kvCacheType',
      KV_CACHE_TYPES.map((t) => `'${t}'`).join(', '),
      kvCacheType,
      typeof kvCacheType === 'string' ? 'range' : 'type',
    );
  }
  const maxSequences = o.maxSequences === undefined ? undefined : integerInRange('maxSequences', o.maxSequences, 1, 65536);
  const prefillChunk = o.prefillChunk === undefined ? PREFILL_CHUNK : integerInRange('prefillChunk', o.prefillChunk, 1, 65536);
  if (o.repack !== undefined && typeof o.repack !== 'boolean') throw invalidParameterError('repack', 'a boolean', o.repack, 'type');
  return {
    repack: o.repack ?? true,
    threads,
    maxSequences,
    prefillChunk,
    signal: o.signal,
    onLoadProgress: o.onLoadProgress,
    prefetch: o.prefetch ?? true,
    batchSize,
    cpuKernels,
    vocabOnly: o.vocabOnly ?? false,
    kvCacheType,
  };
}

/** A tensor type's name: the addon's, else GGUF's (types this package does not read). */
function typeName(addon: NativeAddon, id: number): string {
  return addon.tensorTypes.find((t) => t.id === id)?.name ?? (GGMLQuantizationType as unknown as Record<number, string>)[id] ?? `#${id}`;
}

type CheckedOptions = ReturnType<typeof checkOptions>;

/** The file's architecture; a GgufError naming general.architecture when it is not one of ARCHITECTURES. */
export function architectureOf(header: GgufHeader): Architecture {
  const name = header.metadata['general.architecture'];
  const arch = typeof name === 'string' ? ARCHITECTURES.get(name) : undefined;
  if (arch === undefined) {
    throw new GgufError(header.path, 'general.architecture', unsupportedValue(name, [...ARCHITECTURES.keys()]));
  }
  return arch;
}

/** Tensor type name -> count; a GgufError for the first tensor of a type the addon does not read. */
function tensorTypeCounts(header: GgufHeader, addon: NativeAddon): Record<string, number> {
  const weightTypes = addon.tensorTypes
    .filter((t) => t.weight)
    .map((t) => t.name)
    .join(', ');
  const counts: Record<string, number> = {};
  for (const t of header.tensors) {
    const known = addon.tensorTypes.find((x) => x.id === t.type && x.weight);
    if (known === undefined)
      throw new GgufError(header.path, `tensor ${t.name}`, `type ${typeName(addon, t.type)} is not supported (supported: ${weightTypes})`);
    counts[known.name] = (counts[known.name] ?? 0) + 1;
  }
  return counts;
}

/** The addon's model over the mapped file; its refusals as GgufErrors naming the tensor or field. */
function openTransformer(addon: NativeAddon, header: GgufHeader, archName: string, config: NativeModelConfig, o: CheckedOptions): NativeTransformer {
  try {
    return new addon.Transformer(header.path, config, header.tensors, o.threads, o.cpuKernels);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const tensor = /^tensor (\S+): (.*)$/s.exec(message);
    if (tensor) throw new GgufError(header.path, `tensor ${tensor[1]}`, tensor[2]);
    if (/not available on this CPU/.test(message)) throw invalidParameterError('cpuKernels', 'kernels this CPU runs', o.cpuKernels, 'range');
    const field = /^([\w.]+): (.*)$/s.exec(message);
    if (field) throw new GgufError(header.path, ggufKeyOf(archName, field[1]), field[2]);
    throw new GgufError(header.path, 'file', message);
  }
}

/** Reads the weights into memory a chunk per job, reporting progress and checking the signal between chunks. */
async function prefetchWeights(native: NativeTransformer, header: GgufHeader, o: CheckedOptions, aborted: () => Error): Promise<void> {
  if (!o.prefetch) {
    o.onLoadProgress?.(1);
    return;
  }
  const total = header.fileSize - header.dataOffset;
  for (let at = header.dataOffset; at < header.fileSize; at += PREFETCH_CHUNK) {
    if (o.signal?.aborted) throw aborted();
    const end = Math.min(header.fileSize, at + PREFETCH_CHUNK);
    await native.prefetch(at, end);
    o.onLoadProgress?.(Math.min(1, (end - header.dataOffset) / total));
  }
}

/**
 * Loads a GGUF model of a Llama-family architecture (llama, qwen2, qwen3)
 * for the CPU forward pass. Rejects with a GgufError naming the file and
 * field for a file it cannot run, a BackendUnavailableError when the addon
 * is missing, an AbortError when `signal` aborts.
 */
export async function loadModel(path: string, options: LoadModelOptions = {}): Promise<GgufModel> {
  if (typeof path !== 'string' || path === '') throw invalidParameterError('path', 'the path of a .gguf file', path, 'type');
  const o = checkOptions(options);
  const aborted = () => new AbortError(o.signal!.reason, 'Loading the model was aborted');
  if (o.signal?.aborted) throw aborted();
  const loaded = loadAddon();
  if (!loaded.ok) throw new BackendUnavailableError('native', `GGUF models run in the native addon: ${loaded.reason}`);
  const addon = loaded.addon;
  // The Metal device, opened while the file loads and off the event loop:
  // the sampling kernels ('auto' picks them on a Mac) and the 'metal'
  // sequences then find it compiled. Where it cannot open, the reason is
  // kept for whoever asks for it (a backend named 'metal' is an error then).
  const metalOpening = o.vocabOnly ? Promise.resolve() : openSharedAsync('metal');

  // Each step below takes up to some tens of milliseconds for a large
  // vocabulary, so the event loop turns between them.
  const header = await readGgufHeaderOffThread(path);
  await turn();
  if (o.signal?.aborted) throw aborted();
  const arch = architectureOf(header);
  const counts = tensorTypeCounts(header, addon);
  const config = readConfig(header, arch);
  checkKvCacheType(o.kvCacheType, config.headDim);
  const vocabulary = GgufTokenizer.fromHeader(header, config.vocabSize);
  await turn();
  const tokenizer = vocabulary ?? new ByteTokenizer();
  const eosTokens = vocabulary?.endOfGenerationTokens ?? endOfGenerationTokens(path, header.metadata, new Map(), config.vocabSize);
  const chatTemplate = chatTemplateOf(header);
  await turn();
  if (o.signal?.aborted) throw aborted();

  const native = o.vocabOnly ? undefined : openTransformer(addon, header, arch.name, config, o);
  let repackedBytes = 0;
  // The tokenizer's worker builds its encoders while the weights load, and
  // the model is ready only with them: its first encode() or encodeAsync()
  // waits for nothing but the encoding. A failure there is reported by the
  // first encode.
  const encoderReady = vocabulary?.prepare().catch(() => undefined);
  if (native === undefined) o.onLoadProgress?.(1);
  else {
    try {
      await prefetchWeights(native, header, o, aborted);
      if (o.signal?.aborted) throw aborted();
      if (o.repack) repackedBytes = await native.repackWeights();
    } catch (error) {
      native.dispose();
      vocabulary?.dispose();
      throw error;
    }
  }
  await metalOpening;
  await encoderReady;
  const name = header.metadata['general.name'];
  return new GgufModel(
    native,
    {
      path,
      architecture: arch.name,
      name: typeof name === 'string' ? name : undefined,
      config: Object.freeze({ ...config }),
      tensorTypes: Object.freeze(counts),
      fileSize: header.fileSize,
      trainedContextLength: trainedContextLength(header, arch),
      poolingType: poolingTypeOf(header, arch.name),
      threads: native?.threads ?? 0,
      cpuKernels: native?.isa ?? 'none',
      vocabOnly: native === undefined,
      kvCacheType: o.kvCacheType,
      ...(o.maxSequences !== undefined && { maxSequences: o.maxSequences }),
      prefillChunk: o.prefillChunk,
      repackedBytes,
    },
    tokenizer,
    Object.freeze(eosTokens),
    o.batchSize,
    header.tensors,
    chatTemplate,
  );
}

const POOLING_TYPES = ['none', 'mean', 'cls', 'last', 'rank'] as const;

/** <arch>.pooling_type, as llama.cpp numbers it; 'none' when absent (llama.cpp's default for these architectures). */
function poolingTypeOf(header: GgufHeader, arch: string): (typeof POOLING_TYPES)[number] {
  const key = `${arch}.pooling_type`;
  const value = header.metadata[key];
  if (value === undefined) return 'none';
  if (typeof value !== 'number' || !Number.isInteger(value) || POOLING_TYPES[value] === undefined) {
    throw new GgufError(header.path, key, `expected 0 (none), 1 (mean), 2 (cls), 3 (last) or 4 (rank), got ${JSON.stringify(value)}`);
  }
  return POOLING_TYPES[value];
}

/** The file's chat template, parsed; undefined when it has none. */
function chatTemplateOf(header: GgufHeader): ChatTemplate | undefined {
  const source = header.metadata['tokenizer.chat_template'];
  if (source === undefined) return undefined;
  if (typeof source !== 'string') throw new GgufError(header.path, 'tokenizer.chat_template', 'expected a string');
  try {
    return new ChatTemplate(source, header.path);
  } catch (error) {
    throw new GgufError(header.path, 'tokenizer.chat_template', (error as Error).message.replace(`${header.path}: `, ''));
  }
}
