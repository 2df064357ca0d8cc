// random-model.ts: Llama-family GGUF files with random weights, for the
// tests and the benchmark. Quantized tensors are random blocks (every bit
// pattern a real file could hold) with their scales calibrated so each
// matrix has the spread a trained one has; the vocabulary is byte-level
// BPE (256 byte symbols, then plain pieces and control tokens), which
// llama.cpp loads as any gpt2-type vocabulary.
import { normal, seededRandom } from '../../lib/bench/logit-rows.js';
import { float16FromNumber } from '../../lib/float16.js';
import { BLOCK, dequantize, rescaleBlocks, rowBytes, TYPE, type TypeName } from './dequantize.js';
import { writeGguf, type GgufTensorSpec, type GgufValue } from './gguf-writer.js';
import { isMix, mixType, type MixName } from './quant-mix.js';

export type ArchName = 'llama' | 'qwen2' | 'qwen3' | 'qwen3moe' | 'gemma3' | 'phi3';

export interface ModelShape {
  vocab: number;
  d: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ff: number;
  /** Leading dims of each head that RoPE rotates. Default headDim. */
  ropeDims?: number;
  /** gemma3: the windowed layers' sliding window. */
  slidingWindow?: number;
  /** phi3: contexts past this take rope_factors_long (LongRoPE). Default 16: every test's context is longer. */
  ropeOriginalContext?: number;
  /** qwen3moe: experts per layer, used per token, and each one's FFN rows. */
  experts?: { count: number; used: number; ffn: number };
}

export interface RandomModelSpec {
  arch: ArchName;
  /** The type of every matrix, or a mix's type for each (quant-mix.ts); norms, biases and rope factors are F32. */
  type: TypeName | MixName;
  shape: ModelShape;
  seed: number;
  /** No output.weight: the LM head is token_embd (Llama 3.2 1B, SmolLM2). Default false. */
  tied?: boolean;
  /** llama only: a rope_freqs.weight tensor of llama3-style factors. Default false. */
  ropeFactors?: boolean;
  /** Types for some matrices by their name in a layer ('ffn_up_exps'), over `type`: a file whose matrices mix types. */
  typeOverrides?: Record<string, TypeName>;
  /** Spread of the logits, about. Default 3. */
  logitScale?: number;
  /** tokenizer.* metadata of a real vocabulary (real-vocab.ts); shape.vocab must be its size. Default: the synthetic byte-level one. */
  vocabulary?: Record<string, GgufValue>;
}

/** Stacked expert tensors larger than this are generated as they are written (random-model's `stacked`). */
const STREAMED_TENSOR_BYTES = 64 * 1024 * 1024;

/** The seeded generator of the benchmark's rows (mulberry32): the same numbers on every machine. */
export const rng = seededRandom;

/** A shape small enough for tests whose widths fit `type`'s blocks (256 values for the K types). */
export function tinyShape(arch: ArchName, type: TypeName): ModelShape {
  const k = BLOCK[type][0] === 256;
  const d = k ? 256 : 128;
  // gemma3: 6 layers, so that one (the last) is global; a window of 5 positions.
  if (arch === 'gemma3') return { vocab: 300, d, layers: 6, heads: 4, kvHeads: 2, headDim: 64, ff: k ? 512 : 256, slidingWindow: 5 };
  // qwen3's head_dim is not d / heads: test that.
  const qwen3 = arch === 'qwen3' || arch === 'qwen3moe';
  const heads = qwen3 ? (k ? 8 : 4) : 4;
  const headDim = qwen3 ? 64 : d / heads;
  // qwen3moe: 8 experts of 2 used per token.
  const experts = arch === 'qwen3moe' ? { count: 8, used: 2, ffn: k ? 256 : 64 } : undefined;
  return { vocab: 300, d, layers: 2, heads, kvHeads: 2, headDim, ff: k ? 512 : 256, experts };
}

/** Random `rows` x `cols` of `type` whose values have standard deviation sigma. */
export function randomMatrix(type: TypeName, cols: number, rows: number, sigma: number, next: () => number): Uint8Array {
  const bytes = new Uint8Array(rowBytes(type, cols) * rows);
  const view = new DataView(bytes.buffer);
  if (type === 'F32' || type === 'F16' || type === 'BF16') {
    for (let i = 0; i < cols * rows; i++) {
      const v = normal(next) * sigma;
      if (type === 'F32') view.setFloat32(4 * i, v, true);
      else if (type === 'F16') view.setUint16(2 * i, float16FromNumber(v), true);
      else view.setUint16(2 * i, bf16FromNumber(v), true);
    }
    return bytes;
  }
  for (let i = 0; i < bytes.length; i += 4) view.setUint32(i, (next() * 4294967296) >>> 0, true);
  // Unit scales (dmin centring the K types' values, m the Q4_1 ones), then
  // one factor for the whole matrix from the spread of its first rows.
  const [, size] = BLOCK[type];
  for (let p = 0; p < bytes.length; p += size) {
    const set = (at: number, v: number) => view.setUint16(p + at, float16FromNumber(v), true);
    const scaleAt = { Q6_K: 208, Q2_K: 80, Q3_K: 108 }[type as string] ?? 0;
    set(scaleAt, 1);
    if (type === 'Q4_1') set(2, -7.5);
    if (type === 'Q5_1') set(2, -15.5);
    if (type === 'Q4_K' || type === 'Q5_K') set(2, type === 'Q4_K' ? 7.5 : 15.5);
    // Q2_K's values are d * s * q - dmin * m with random 4-bit s and m: a dmin of 1.5 centres them.
    if (type === 'Q2_K') set(82, 1.5);
  }
  const sampleRows = Math.min(rows, 8);
  const sample = dequantize(type, bytes, 0, sampleRows * cols);
  let sum = 0,
    sq = 0;
  for (const v of sample) {
    sum += v;
    sq += v * v;
  }
  const mean = sum / sample.length;
  const std = Math.sqrt(Math.max(sq / sample.length - mean * mean, 1e-30));
  rescaleBlocks(type, bytes, sigma / std);
  return bytes;
}

/** Scales rows from `fromRow` on by `factor` (in place). */
function scaleRows(type: TypeName, bytes: Uint8Array, cols: number, fromRow: number, factor: number): void {
  const part = bytes.subarray(fromRow * rowBytes(type, cols));
  const view = new DataView(part.buffer, part.byteOffset, part.byteLength);
  if (type === 'F32') for (let i = 0; i < part.length; i += 4) view.setFloat32(i, view.getFloat32(i, true) * factor, true);
  else if (type === 'F16' || type === 'BF16') {
    const values = dequantize(type, part, 0, part.length / 2);
    values.forEach((v, i) => view.setUint16(2 * i, type === 'F16' ? float16FromNumber(v * factor) : bf16FromNumber(v * factor), true));
  } else rescaleBlocks(type, part, factor);
}

function bf16FromNumber(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

function f32(values: ArrayLike<number>): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

/** GPT-2's byte-level symbol for each byte. */
export function byteSymbols(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const symbols = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) symbols[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + extra++);
  return symbols;
}

/** Token strings and types: bytes, then "t<n>" pieces, then 4 control tokens at the end. */
export function vocabulary(size: number): { tokens: string[]; types: number[]; eos: number } {
  const tokens = byteSymbols();
  while (tokens.length < size - 4) tokens.push(`t${tokens.length}`);
  tokens.push('<|begin_of_text|>', '<|end_of_text|>', '<|im_start|>', '<|im_end|>');
  const types = tokens.map((_, i) => (i >= size - 4 ? 3 : 1));
  return { tokens: tokens.slice(0, size), types: types.slice(0, size), eos: size - 3 };
}

export function modelTensors(spec: RandomModelSpec): { metadata: Record<string, GgufValue>; tensors: GgufTensorSpec[] } {
  const { arch, shape: s } = spec;
  const next = rng(spec.seed);
  const q = s.heads * s.headDim,
    kv = s.kvHeads * s.headDim;
  const tensors: GgufTensorSpec[] = [];
  const typeOf = (name: string, tied: boolean): TypeName =>
    spec.typeOverrides?.[name.replace(/^blk\.\d+\./, '').replace(/\.weight$/, '')] ??
    (isMix(spec.type) ? mixType(spec.type, name, s.layers, tied) : spec.type);
  const matrix = (name: string, cols: number, rows: number, sigma: number) => {
    const type = typeOf(name, spec.tied ?? false);
    const data = randomMatrix(type, cols, rows, sigma, next);
    // The 4 control tokens (end of text among them) get small logits, so
    // greedy runs are long: their LM-head rows are scaled down.
    if (name === 'output.weight' || (name === 'token_embd.weight' && spec.tied)) scaleRows(type, data, cols, rows - 4, 0.1);
    tensors.push({ name, type: TYPE[type], dims: [cols, rows], data });
  };
  const vector = (name: string, n: number, f: () => number) =>
    tensors.push({ name, type: TYPE.F32, dims: [n], data: f32(Array.from({ length: n }, f)) });
  const norm = () => 1 + 0.1 * normal(next);
  const logitScale = spec.logitScale ?? 3;

  matrix('token_embd.weight', s.d, s.vocab, spec.tied ? logitScale / Math.sqrt(s.d) : 1);
  vector('output_norm.weight', s.d, norm);
  if (!spec.tied) matrix('output.weight', s.d, s.vocab, logitScale / Math.sqrt(s.d));
  const ropeDims = s.ropeDims ?? s.headDim;
  if (spec.ropeFactors) vector('rope_freqs.weight', ropeDims / 2, () => 1 + 7 * next());
  if (arch === 'phi3') {
    // LongRoPE's two sets: near 1 for short contexts, stretched for long ones.
    vector('rope_factors_short.weight', ropeDims / 2, () => 1 + 0.2 * next());
    vector('rope_factors_long.weight', ropeDims / 2, () => 1 + 15 * next());
  }
  for (let l = 0; l < s.layers; l++) {
    const p = `blk.${l}.`;
    vector(`${p}attn_norm.weight`, s.d, norm);
    // phi3: Q, K and V rows in one matrix.
    if (arch === 'phi3') matrix(`${p}attn_qkv.weight`, s.d, q + 2 * kv, 1 / Math.sqrt(s.d));
    else {
      matrix(`${p}attn_q.weight`, s.d, q, 1 / Math.sqrt(s.d));
      matrix(`${p}attn_k.weight`, s.d, kv, 1 / Math.sqrt(s.d));
      matrix(`${p}attn_v.weight`, s.d, kv, 1 / Math.sqrt(s.d));
    }
    if (arch === 'qwen2') {
      vector(`${p}attn_q.bias`, q, () => 0.1 * normal(next));
      vector(`${p}attn_k.bias`, kv, () => 0.1 * normal(next));
      vector(`${p}attn_v.bias`, kv, () => 0.1 * normal(next));
    }
    if (arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gemma3') {
      vector(`${p}attn_q_norm.weight`, s.headDim, norm);
      vector(`${p}attn_k_norm.weight`, s.headDim, norm);
    }
    matrix(`${p}attn_output.weight`, q, s.d, 0.5 / Math.sqrt(q));
    // gemma3 normalises each branch before its residual add: unit-size branches.
    if (arch === 'gemma3') vector(`${p}post_attention_norm.weight`, s.d, () => 0.3 * norm());
    vector(`${p}ffn_norm.weight`, s.d, norm);
    if (s.experts !== undefined) {
      // qwen3moe: the router (float32, with well separated logits: each token's top experts are clear), then each
      // expert's matrices stacked in one 3-D tensor apiece.
      const { count, used, ffn } = s.experts;
      tensors.push({
        name: `${p}ffn_gate_inp.weight`,
        type: TYPE.F32,
        dims: [s.d, count],
        data: randomMatrix('F32', s.d, count, 4 / Math.sqrt(s.d), next),
      });
      const stacked = (name: string, cols: number, rows: number, sigma: number) => {
        const type = typeOf(name, false);
        const bytes = rowBytes(type, cols) * rows * count;
        // A real model's experts (Qwen3-30B-A3B: 48 layers of three 113 MB tensors) are written one expert at a
        // time, each from a generator seeded by this one, so the file never sits in memory.
        const data =
          bytes <= STREAMED_TENSOR_BYTES
            ? randomMatrix(type, cols, rows * count, sigma, next)
            : (() => {
                const seed = (next() * 4294967296) >>> 0;
                return {
                  bytes,
                  write: async (sink: (part: Uint8Array) => Promise<void>) => {
                    const expertNext = rng(seed);
                    for (let e = 0; e < count; e++) await sink(randomMatrix(type, cols, rows, sigma, expertNext));
                  },
                };
              })();
        tensors.push({ name, type: TYPE[type], dims: [cols, rows, count], data });
      };
      stacked(`${p}ffn_gate_exps.weight`, s.d, ffn, 1 / Math.sqrt(s.d));
      stacked(`${p}ffn_up_exps.weight`, s.d, ffn, 1 / Math.sqrt(s.d));
      stacked(`${p}ffn_down_exps.weight`, ffn, s.d, (Math.sqrt(used) * 0.5) / Math.sqrt(ffn));
      continue;
    }
    // phi3: the gate's rows, then the up's, in one ffn_up.
    if (arch === 'phi3') matrix(`${p}ffn_up.weight`, s.d, 2 * s.ff, 1 / Math.sqrt(s.d));
    else {
      matrix(`${p}ffn_gate.weight`, s.d, s.ff, 1 / Math.sqrt(s.d));
      matrix(`${p}ffn_up.weight`, s.d, s.ff, 1 / Math.sqrt(s.d));
    }
    matrix(`${p}ffn_down.weight`, s.ff, s.d, 0.5 / Math.sqrt(s.ff));
    if (arch === 'gemma3') vector(`${p}post_ffw_norm.weight`, s.d, () => 0.3 * norm());
  }

  const { tokens, types, eos } = vocabulary(s.vocab);
  let metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: arch },
    // llama.cpp gives the special tokens of a model whose name contains "phi3" Phi-3's attributes, and needs
    // Phi-3's tokens for that: the synthetic vocabulary has none, so the name spells it otherwise.
    'general.name': { type: 'string', value: `random ${arch === 'phi3' ? 'phi 3' : arch} ${spec.type} seed ${spec.seed}` },
    [`${arch}.context_length`]: { type: 'u32', value: 4096 },
    [`${arch}.embedding_length`]: { type: 'u32', value: s.d },
    [`${arch}.block_count`]: { type: 'u32', value: s.layers },
    [`${arch}.feed_forward_length`]: { type: 'u32', value: s.ff },
    [`${arch}.attention.head_count`]: { type: 'u32', value: s.heads },
    [`${arch}.attention.head_count_kv`]: { type: 'u32', value: s.kvHeads },
    [`${arch}.attention.layer_norm_rms_epsilon`]: { type: 'f32', value: arch === 'llama' ? 1e-5 : 1e-6 },
    [`${arch}.rope.freq_base`]: { type: 'f32', value: arch === 'llama' ? 500000 : 1000000 },
    [`${arch}.rope.dimension_count`]: { type: 'u32', value: ropeDims },
    'tokenizer.ggml.model': { type: 'string', value: 'gpt2' },
    'tokenizer.ggml.pre': { type: 'string', value: 'default' },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: types },
    'tokenizer.ggml.merges': { type: 'strings', value: [] },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: s.vocab - 4 },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: false },
  };
  if (spec.vocabulary) {
    metadata = Object.fromEntries(Object.entries(metadata).filter(([key]) => !key.startsWith('tokenizer.')));
    Object.assign(metadata, spec.vocabulary);
  }
  if (s.experts !== undefined) {
    metadata[`${arch}.expert_count`] = { type: 'u32', value: s.experts.count };
    metadata[`${arch}.expert_used_count`] = { type: 'u32', value: s.experts.used };
    metadata[`${arch}.expert_feed_forward_length`] = { type: 'u32', value: s.experts.ffn };
  }
  if (arch === 'phi3') {
    metadata['phi3.rope.scaling.original_context_length'] = { type: 'u32', value: s.ropeOriginalContext ?? 16 };
    metadata['phi3.rope.scaling.attn_factor'] = { type: 'f32', value: 1.19 };
  }
  if (arch === 'gemma3' && s.slidingWindow !== undefined) metadata['gemma3.attention.sliding_window'] = { type: 'u32', value: s.slidingWindow };
  if (arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gemma3' || s.headDim * s.heads !== s.d) {
    metadata[`${arch}.attention.key_length`] = { type: 'u32', value: s.headDim };
    metadata[`${arch}.attention.value_length`] = { type: 'u32', value: s.headDim };
  }
  return { metadata, tensors };
}

export async function writeRandomModel(path: string, spec: RandomModelSpec): Promise<void> {
  const { metadata, tensors } = modelTensors(spec);
  await writeGguf(path, metadata, tensors);
}
