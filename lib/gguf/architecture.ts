// architecture.ts: what differs between the Llama-family architectures
// (one small file each in architectures/), and the metadata keys all of
// them share, read into the config the native forward pass takes.
import type { MetadataValue } from '@huggingface/gguf';

import type { NativeModelConfig } from '../native/contract.js';
import { GgufError } from './gguf-error.js';
import type { GgufHeader } from './read-header.js';

export interface Architecture {
  /** general.architecture */
  readonly name: string;
  /** The native graph builder that runs it (model_config.h's GraphFamily): 0 llama, 1 gemma3. */
  readonly graph: 0 | 1;
  /** 0: RoPE rotates adjacent pairs (llama's layout); 2: the two halves of each head (neox). */
  readonly ropeMode: 0 | 2;
  /** Q, K and V projections have biases (attn_q.bias...). */
  readonly qkvBias: boolean;
  /** Each head of Q and K is RMS-normalised before RoPE (attn_q_norm, attn_k_norm). */
  readonly qkNorm: boolean;
  /** The fields its graph reads beyond the shared ones (gemma3's window, scales, GeGLU), from the metadata. */
  readonly extraConfig?: (m: MetadataReader, shared: SharedConfig) => Partial<ArchitectureConfig>;
}

/** The config fields every architecture reads the same way. */
export type SharedConfig = Omit<NativeModelConfig, keyof ArchitectureConfig>;
/** The fields an architecture may set; a llama-family default otherwise. */
export type ArchitectureConfig = Pick<
  NativeModelConfig,
  | 'ffnActivation'
  | 'embeddingScale'
  | 'attentionScale'
  | 'slidingWindow'
  | 'slidingWindowPattern'
  | 'ropeBaseLocal'
  | 'ropeOriginalContext'
  | 'ropeAttnFactor'
  | 'expertCount'
  | 'expertUsedCount'
  | 'expertFfnLength'
>;

const LLAMA_DEFAULTS: ArchitectureConfig = {
  ffnActivation: 0,
  embeddingScale: 1,
  attentionScale: 0,
  slidingWindow: 0,
  slidingWindowPattern: 0,
  ropeBaseLocal: 0,
  ropeOriginalContext: 0,
  ropeAttnFactor: 1,
  expertCount: 0,
  expertUsedCount: 0,
  expertFfnLength: 0,
};

/** Reads `${arch}.key` metadata, failing with a GgufError that names the key. */
export class MetadataReader {
  constructor(
    readonly header: GgufHeader,
    readonly prefix: string,
  ) {}

  value(key: string): MetadataValue | undefined {
    return this.header.metadata[`${this.prefix}.${key}`];
  }

  fail(key: string, detail: string): never {
    throw new GgufError(this.header.path, `${this.prefix}.${key}`, detail);
  }

  /** An integer of at least `min` (default 1). */
  integer(key: string, fallback?: number, min = 1): number {
    let v = this.value(key);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      this.fail(key, 'missing');
    }
    if (Array.isArray(v)) {
      // Some files store a per-layer list; a uniform one is one number.
      const first: unknown = v[0];
      if (v.length === 0 || v.some((x: unknown) => x !== first)) this.fail(key, 'a per-layer list with differing values is not supported');
      v = first as MetadataValue;
    }
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) {
      this.fail(key, `expected ${min === 1 ? 'a positive integer' : `an integer of at least ${min}`}, got ${String(v)}`);
    }
    return n;
  }

  float(key: string, fallback?: number): number {
    const v = this.value(key);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      this.fail(key, 'missing');
    }
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.fail(key, `expected a positive number, got ${String(v)}`);
    return v;
  }

  string(key: string): string | undefined {
    const v = this.value(key);
    if (v !== undefined && typeof v !== 'string') this.fail(key, `expected a string, got ${String(v)}`);
    return v;
  }
}

/** The native config for `arch`, from the header's metadata and the embedding's shape. */
export function readConfig(header: GgufHeader, arch: Architecture): NativeModelConfig {
  const m = new MetadataReader(header, arch.name);
  const embedding = header.tensors.find((t) => t.name === 'token_embd.weight');
  if (embedding === undefined || embedding.dims.length !== 2) throw new GgufError(header.path, 'tensor token_embd.weight', 'missing, or not 2-D');
  const embeddingLength = m.integer('embedding_length');
  const headCount = m.integer('attention.head_count');
  const headDim = m.integer('attention.key_length', Math.floor(embeddingLength / headCount));
  const valueLength = m.integer('attention.value_length', headDim);
  if (valueLength !== headDim) m.fail('attention.value_length', `${valueLength} differs from attention.key_length ${headDim}; not supported`);
  // RoPE rotates pairs of the first ropeDims values of each head: 0 rotates
  // nothing; an odd count is what ggml's rope refuses too.
  const ropeDims = m.integer('rope.dimension_count', headDim, 0);
  if (ropeDims % 2 !== 0 || ropeDims > headDim) {
    m.fail('rope.dimension_count', `expected an even number from 0 to the head dimension ${headDim}, got ${ropeDims}`);
  }
  const scaling = m.string('rope.scaling.type') ?? 'none';
  let ropeFreqScale = 1;
  if (scaling === 'linear') ropeFreqScale = 1 / m.float('rope.scaling.factor');
  else if (scaling !== 'none')
    m.fail('rope.scaling.type', `"${scaling}" is not supported (supported: none, linear; llama3 factors come as the rope_freqs tensor)`);
  const shared: SharedConfig = {
    graph: arch.graph,
    vocabSize: embedding.dims[1],
    embeddingLength,
    blockCount: m.integer('block_count'),
    headCount,
    headCountKv: m.integer('attention.head_count_kv', headCount),
    headDim,
    ffnLength: m.integer('feed_forward_length'),
    ropeDims,
    ropeMode: arch.ropeMode,
    ropeBase: m.float('rope.freq_base', 10000),
    ropeFreqScale,
    normEps: m.float('attention.layer_norm_rms_epsilon'),
    qkvBias: arch.qkvBias,
    qkNorm: arch.qkNorm,
  };
  return { ...shared, ...LLAMA_DEFAULTS, ...arch.extraConfig?.(m, shared) };
}

/** The model's training context length, when the file says. */
export function trainedContextLength(header: GgufHeader, arch: Architecture): number | undefined {
  const v = header.metadata[`${arch.name}.context_length`];
  const n = typeof v === 'bigint' ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

// Where each field of the config comes from in the file, so that a refusal
// of the native checks names the GGUF key, not the config's field.
const CONFIG_SOURCES: Partial<Record<keyof NativeModelConfig, string>> = {
  embeddingLength: 'embedding_length',
  blockCount: 'block_count',
  headCount: 'attention.head_count',
  headCountKv: 'attention.head_count_kv',
  headDim: 'attention.key_length',
  ffnLength: 'feed_forward_length',
  ropeDims: 'rope.dimension_count',
  ropeBase: 'rope.freq_base',
  normEps: 'attention.layer_norm_rms_epsilon',
  slidingWindow: 'attention.sliding_window',
  expertCount: 'expert_count',
  expertUsedCount: 'expert_used_count',
  expertFfnLength: 'expert_feed_forward_length',
};

/** The GGUF key a config field is read from (`${arch}.feed_forward_length` for ffnLength), or the field when it has none. */
export function ggufKeyOf(archName: string, field: string): string {
  const name = field.replace(/^config\./, '') as keyof NativeModelConfig;
  if (name === 'vocabSize') return 'tensor token_embd.weight';
  const source = CONFIG_SOURCES[name];
  return source === undefined ? field : `${archName}.${source}`;
}
