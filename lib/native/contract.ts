// contract.ts: the typed shape of the compiled addon's exports
// (native/addon/addon.cpp). The loader checks abiVersion against this file.

export const ADDON_ABI_VERSION = 9;

export type DeviceKind = 'metal' | 'emulated';

export type SamplingSlotName =
  | 'temperature'
  | 'topK'
  | 'topP'
  | 'minP'
  | 'seed'
  | 'position'
  | 'unitFilterTemperature'
  | 'repeatPenalty'
  | 'frequencyPenalty'
  | 'presencePenalty'
  | 'lastTokens';

/** The arguments of one sampling step, as sampleRow and the devices take them. */
export type SamplingArguments = [
  logits: Float32Array | Uint16Array,
  slots: Float64Array,
  history: Uint32Array,
  biasTokens: Uint32Array,
  biasValues: Float32Array,
  /** The allowed tokens, ceil(V / 32) words; empty for every token. */
  mask: Uint32Array,
];

/** A sampling configuration as llama.cpp's chain (native/bench/llama_cpp_sampler.h): off values 0, 1, 1, 0 for topK, topP, repeatPenalty, minP. */
export interface LlamaChainConfig {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  lastTokens: number;
  seed: number;
}

/** Device memory both the CPU and the GPU address (native/addon/buffer_binding.h). */
export interface NativeBuffer {
  readonly length: number;
  /** Copies the view's bytes to `offset`. */
  write(offset: number, data: ArrayBufferView): void;
  /** A copy of `length` bytes from `offset`. */
  read(offset: number, length: number): ArrayBuffer;
  /** Frees the memory now (work in flight keeps it until it completes). */
  dispose(): void;
}

/** The patch rules of native/core/dispatch_table.h, by name. */
export type PatchRuleName = 'none' | 'tokenOffset' | 'position' | 'kvLength' | 'positionAndKvLength' | 'argmaxOutput' | 'sampledToken';

/** One command as createTable reads it (lib/gpu/dispatch-table.ts builds these). */
export interface NativeCommand {
  kernel: string;
  label: string;
  buffers: { index: number; buffer: NativeBuffer; offset: number }[];
  params: Uint8Array | null;
  paramsIndex: number;
  threadgroups: number;
  threadsPerThreadgroup: number;
  threadgroupMemory: number;
  patch: { rule: number; buffer: number; fields: [number, number]; ahead?: number };
}

/** A recorded DispatchTable (native/addon/table_binding.h). */
export interface NativeTable {
  readonly size: number;
  readonly labels: string[];
  /** Lets go of the commands and the buffers they hold. */
  dispose(): void;
}

/** A GPU device with the sampling kernels (native/addon/device_binding.h). */
export interface NativeDevice {
  /** e.g. "Apple M2 Pro" or "emulated (CPU fibers, forward order)". */
  readonly name: string;
  /** Blocks until the kernels ran; the token, or noToken. */
  sample(...args: SamplingArguments): number;
  /** The same off the event loop. */
  sampleAsync(...args: SamplingArguments): Promise<number>;
  /** Releases the device; work already queued finishes. */
  dispose(): void;
  createBuffer(length: number): NativeBuffer;
  /** Each range of the file as a read-only buffer over its mapping, from the 16 KB boundary below it; offset: where the range starts in it. */
  /** `source`: a path, or a model whose own mapping the buffers share (the file opened at load). */
  mapFile(source: string | NativeTransformer, ranges: readonly { offset: number; length: number }[]): { buffer: NativeBuffer; offset: number }[];
  /** Throws TypeError/RangeError naming commands[i] and the field. */
  createTable(commands: NativeCommand[]): NativeTable;
  /** Encodes positions start .. start + n - 1 into one command buffer, commits; resolves when the GPU is done. */
  runChain(table: NativeTable, start: number, n: number): Promise<void>;
  /** Every kernel name the device has, sorted. */
  kernelNames(): string[];
  maxThreadsPerThreadgroup(kernel: string): number;
  /** Metal only: compiles Metal source and adds its kernels. */
  addKernelSource(source: string): void;
}

export interface NativeTransformerLayouts {
  rows: { size: number; n: number; rows: number; eps: number; broadcast: number };
  /** FlashSampling's params (md_head_sampling_params): the LM head and the token's pick in one pass. */
  headSampling: {
    size: number;
    rows: number;
    cols: number;
    flags: number;
    temperature: number;
    seed: number;
    position: number;
    linePhase: number;
  };
  /** md_head_sampling_params flags: half (float16 logits, the sampler's), bias (a dense bias per token). */
  headFlags: { half: number; bias: number };
  /** The most threadgroups md_head_sample_* takes (its partials). */
  headMaxTiles: number;
  /** Rows of W per SIMD group in the matrix-vector kernels. */
  matvecRows: number;
  /** Rows of W per SIMD group in the batch form (md_matvec_batch_*). */
  matvecBatchRows: number;
  /** Where md_matvec_params keeps its count of token rows (the batch form's 1 to 8), bytes. */
  matvecCount: number;
  /** Query heads the decode attention serves per pass over a KV head's positions. */
  attentionGroup: number;
  /** Positions a SIMD group of the attention takes per step of its online softmax. */
  attentionBlock: number;
  /** The memory line the matrix-vector kernels lay their loads out in, bytes (line phases are offsets mod this). */
  lineBytes: number;
}

/** Byte layouts of the kernel parameter structs (metal/md_sampling.h). */
export interface NativeLayouts {
  samplingParams: { size: number; position: number; historyCount: number };
  argmaxParams: { size: number; vocabSize: number; flags: number };
  bigramParams: { size: number; vocabSize: number; dim: number };
  /** The transformer kernels' params blocks TypeScript packs (metal/md_transformer.h): each field's byte offset. */
  transformer: NativeTransformerLayouts;
  biasEntry: number;
  /** Bins of md_sample_f16's per-row histogram scratch (uint32 each). */
  halfKeyBins: number;
  /** The wide sampling kernels' scratch (sampling_wide.metal): md_wide_partial and md_wide_state bytes. */
  wideSampling: { partialBytes: number; stateBytes: number };
  maxInlineParams: number;
  maxCommandBuffers: number;
  maxBufferIndex: number;
  noField: number;
  /** The most rows a patch may look ahead (PatchSpec ahead). */
  maxPatchAhead: number;
  /** Metal's rules for threadgroup memory lengths: a multiple of this, at most maxThreadgroupMemory. */
  threadgroupMemoryAlignment: number;
  maxThreadgroupMemory: number;
  /** MD_MAX_TEMPERATURE, as float32. */
  maxTemperature: number;
}

/** A GGUF tensor type the addon reads (native/core/quant/tensor_types.h). */
export interface NativeTensorType {
  /** GGUF's type id. */
  id: number;
  name: string;
  blockValues: number;
  blockBytes: number;
  /** false for the activation-only types (Q8_1, Q8_K). */
  weight: boolean;
  /** The GPU kernels' suffix for a weight type (md_matvec_<suffix>...); null for the activation-only types. */
  kernelSuffix: string | null;
}

/** The shape of a model (native/core/transformer/model_config.h). */
export interface NativeModelConfig {
  /** The graph builder: 0 llama (llama, qwen2, qwen3), 1 gemma3. */
  graph: 0 | 1;
  vocabSize: number;
  embeddingLength: number;
  blockCount: number;
  headCount: number;
  headCountKv: number;
  headDim: number;
  ffnLength: number;
  ropeDims: number;
  /** 0: adjacent pairs (llama); 2: split halves (qwen2, qwen3). */
  ropeMode: 0 | 2;
  ropeBase: number;
  ropeFreqScale: number;
  normEps: number;
  qkvBias: boolean;
  qkNorm: boolean;
  /** 0: SwiGLU; 1: GeGLU (GELU's tanh approximation). */
  ffnActivation: 0 | 1;
  /** The embedding rows' factor (gemma: sqrt(embeddingLength)). */
  embeddingScale: number;
  /** The attention scores' scale; 0: 1 / sqrt(headDim). */
  attentionScale: number;
  /** Positions a windowed layer's query sees; 0: no window. */
  slidingWindow: number;
  /** With a window, layer l is windowed when l % n < n - 1; 0: every layer. */
  slidingWindowPattern: number;
  /** A windowed layer's RoPE base (frequency scale 1); 0: ropeBase. */
  ropeBaseLocal: number;
  /** LongRoPE (phi3): a context longer than this takes rope_factors_long; 0: never. */
  ropeOriginalContext: number;
  /** Multiplies RoPE's cos and sin (phi3's rope.scaling.attn_factor); 1 otherwise. */
  ropeAttnFactor: number;
  /** Mixture of experts (qwen3moe): experts per layer, chosen per token, and each one's FFN rows; 0 for a dense FFN. */
  expertCount: number;
  expertUsedCount: number;
  expertFfnLength: number;
}

/** One tensor of a GGUF file: dims as GGUF's ne[0], ne[1]; offset from the start of the file. */
export interface NativeTensorEntry {
  name: string;
  type: number;
  dims: number[];
  offset: number;
}

/** A mapped GGUF model (native/addon/transformer_binding.h). */
export interface NativeTransformer {
  readonly fileSize: number;
  /** Why the file no longer holds what was loaded (truncated, written to), naming it; undefined while it does. */
  fileProblem(): string | undefined;
  readonly threads: number;
  /** The dot kernels in use: 'amx', 'avx512', 'avx-vnni', 'avx2', 'accelerate', 'neon-i8mm', 'neon' or 'portable'. */
  readonly isa: string;
  /** Reads bytes [begin, end) of the file into memory off the JS thread; resolves with the count. */
  prefetch(begin: number, end: number): Promise<number>;
  /**
   * The matrices the CPU's tiles read repacked for them (native/core/quant/repack.h), on the
   * model's thread after the jobs before it; their mapped pages let go. Resolves with the bytes
   * copied: 0 where the kernels have no repacked tiles (NEON, portable) or use matrix units (AMX).
   */
  repackWeights(): Promise<number>;
  /** cacheType: the KV cache's GGUF tensor type id (F16, F32 or Q8_0; see lib/models/kv-cache-type.ts). */
  createSequence(contextSize: number, maxBatch: number, cacheType: number): NativeTransformerSequence;
  /**
   * The context shift of a GPU table's KV cache (one shared buffer per layer
   * for keys and for values, rows laid out as the CPU's), on the model's
   * thread: positions keep .. keep + discard - 1 of `length` forgotten, the
   * later ones moved down with their keys rotated (transformer/cache_shift.h).
   */
  shiftCache(keys: NativeBuffer[], values: NativeBuffer[], cacheType: number, length: number, keep: number, discard: number): Promise<void>;
  /**
   * One token of each of several of this model's sequences in one forward
   * pass. picks[i] null: sequence i's logits are written as evaluate()
   * writes them; [slots, biasTokens, biasValues]: resolves with the token the
   * fused head picks at out[i], the logits left alone. A RangeError naming the
   * step that does not fit, before any sequence changes.
   */
  evaluateSequences(
    sequences: NativeTransformerSequence[],
    tokens: Uint32Array,
    positions: Uint32Array,
    picks: ([Float64Array, Uint32Array, Float32Array] | null)[],
  ): Promise<Uint32Array>;
  /** Lets go of the model; sequences and work in flight keep it until they end. */
  dispose(): void;
}

/** One sequence's KV cache and logits. */
export interface NativeTransformerSequence {
  /** vocabSize float32 logits of the last evaluate(), over native memory (overwritten by the next). */
  readonly logits: Float32Array;
  readonly length: number;
  readonly contextSize: number;
  readonly kvCacheBytes: number;
  /** Forgets positions >= start, then evaluates tokens there on the model's thread; the logits go to `logits`. */
  evaluate(tokens: Uint32Array, start: number): Promise<void>;
  /** The same, resolving with the logits after each of the last `rows` tokens (rows x vocabSize, a new array). */
  evaluate(tokens: Uint32Array, start: number, rows: number): Promise<Float32Array>;
  /**
   * FlashSampling: evaluate() without writing `logits`, resolving with the
   * token the fused LM head picks with sampleRow's options (slots, bias;
   * temperature and bias only: a filter or a penalty is a RangeError), or
   * noToken when every logit is -Infinity.
   */
  evaluateAndPick(tokens: Uint32Array, start: number, slots: Float64Array, biasTokens: Uint32Array, biasValues: Float32Array): Promise<number>;
  /** The tokens evaluated from position 0, and the last `rows` hidden states after the output norm (rows x embeddingLength). */
  embed(tokens: Uint32Array, rows: number): Promise<Float32Array>;
  /** Context shift: forgets positions keep .. keep + discard - 1 and moves the later ones down, keys rotated (a RangeError when they are over length). */
  shift(keep: number, discard: number): Promise<void>;
  dispose(): void;
}

export interface NativeAddon {
  readonly abiVersion: number;
  /** Where each scalar option goes in sampleRow's `slots` array; `count` is its length. */
  readonly samplingSlots: Readonly<Record<SamplingSlotName | 'count', number>>;
  /** What sampleRow returns when every logit is -Infinity. */
  readonly noToken: number;
  /** MD_FLAG_TOKEN_MASK: the params flag that makes a sampling or argmax kernel read its mask buffer. */
  readonly tokenMaskFlag: number;
  /** One sampling step on the CPU (native/core/cpu_sampler.h). */
  sampleRow(...args: SamplingArguments): number;
  /** The bigram model's CPU forward (native/core/bigram_forward.h): writes logits.length float16 logits. */
  bigramForward(embedding: Uint16Array, head: Uint16Array, dim: number, token: number, logits: Uint16Array): void;
  /** md_sampling_params and md_bias_entry bytes for a sampling command; `logits` gives only the vocabulary size. */
  packSamplingParams(...args: SamplingArguments): { params: Uint8Array; bias: Uint8Array };
  /** Threadgroups the wide sampling kernels' row passes get for a vocabulary (md_wide_groups). */
  wideSamplingGroups(vocabSize: number): number;
  /**
   * llama.cpp's sampler chain, loaded from `libraryPath` (a libllama), on
   * `rows` (whole rows of `vocab` floats; call i reads row i % count), off
   * the event loop: each timed call's microseconds (refilling llama.cpp's
   * candidate array from the row, then the chain) and selected token.
   */
  timeLlamaCppSampler(
    libraryPath: string,
    rows: Float32Array,
    vocab: number,
    config: LlamaChainConfig,
    history: Int32Array,
    iterations: number,
    warmup: number,
  ): Promise<{ microseconds: Float64Array; tokens: Int32Array }>;
  readonly patchRules: Readonly<Record<PatchRuleName, number>>;
  readonly layouts: NativeLayouts;
  /**
   * Opens a device on the calling thread (Metal compiles its kernels there:
   * seconds on the event loop); throws an Error saying why when it cannot
   * (e.g. no Metal on Linux).
   */
  readonly Device: new (kind: DeviceKind) => NativeDevice;
  /** The same device, opened (library, pipelines, probes) on a thread of its own; rejects with the same Error. */
  openDevice(kind: DeviceKind): Promise<NativeDevice>;
  /** "kind:kernel" for every kernel this process dispatched, sorted (the test suite's kernel coverage). */
  dispatchedKernels(): string[];
  /** Maps `path` and binds its tensors; throws RangeError naming the tensor or field that does not fit. */
  readonly Transformer: new (
    path: string,
    config: NativeModelConfig,
    tensors: NativeTensorEntry[],
    threads: number,
    isa: string,
  ) => NativeTransformer;
  readonly tensorTypes: readonly NativeTensorType[];
  /**
   * The model's forward graph (native/core/graph/) as the kernel launches
   * of a dispatch table evaluating `count` tokens; a RangeError naming the
   * option or config field that does not fit.
   */
  recordForward(config: NativeModelConfig, tensors: readonly NativeTensorEntry[], options: NativeRecordOptions): NativeRecordedForward;
  /** Every buffer the forward tables of a sequence bind besides the weights, the tokens and the logits, by name, and its bytes. */
  forwardBuffers(config: NativeModelConfig, options: NativeForwardBufferOptions): { name: string; bytes: number }[];
  /** The kernel launches of a sampling step (native/core/sampling_launches.h), the list the native kernel sampler replays too. */
  samplingLaunches(options: NativeSamplingPlan): NativeSamplingLaunch[];
}

export interface NativeSamplingPlan {
  vocab: number;
  /** Rows in one dispatch (one threadgroup each). Default 1. */
  rows?: number;
  logits: 'f16' | 'f32';
  pick: 'argmax' | 'sample';
  /** One row across many threadgroups (md_wide_groups). */
  wide?: boolean;
  /** For pick 'sample': the chain's md_sampling_params bytes, from which the steps with work are chosen. */
  params?: Uint8Array;
}

export type SamplingBufferName = 'logits' | 'history' | 'bias' | 'edited' | 'histogram' | 'tokens' | 'marks' | 'mask' | 'partials' | 'state';

export interface NativeSamplingLaunch {
  kernel: string;
  label: string;
  buffers: { index: number; buffer: SamplingBufferName }[];
  /** Where the params go: md_sampling_params, or md_argmax_params for md_argmax_*. */
  paramsIndex: number;
  threadgroups: number;
  /** Threads: one per token, up to the pipeline's limit (rowThreads). */
  tokensPerThreadgroup: number;
  /** pick: writes the token (slot p + 1 in a chain); step: reads the step's position and history; none: neither. */
  role: 'none' | 'step' | 'pick';
}

export interface NativeRecordOptions {
  count: number;
  /** Which logits the table leaves: none (prefill), the last token's, every token's (verification, into "rowLogits"). */
  logits: 'none' | 'last' | 'every';
  /** FlashSampling: stop before the LM head and report its tensor (headTensor); the caller appends the fused head and pick. */
  headPick?: boolean;
  /**
   * A batched decode step: each of the count rows is a different sequence's
   * next token (logits 'every'). The commands on a sequence's own state are
   * one per row, marked with sequenceRow.
   */
  sequenceRows?: boolean;
  contextSize: number;
  attentionSplits: number;
  /** The KV cache's GGUF tensor type id (F16, F32 or Q8_0). */
  cacheType: number;
}

export interface NativeForwardBufferOptions {
  maxBatch: number;
  contextSize: number;
  attentionSplits: number;
  cacheType: number;
}

/** One kernel launch: its buffers by name ("tensor:<GGUF name>" for a weight, offset from its start). */
export interface NativeRecordedCommand {
  kernel: string;
  label: string;
  buffers: { index: number; buffer: string; offset: number }[];
  params: { index: number; bytes: Uint8Array };
  threadgroups: number;
  threadsPerThreadgroup: number;
  patch?: { rule: 'position' | 'kvLength'; fields: [number] } | { rule: 'tokenOffset'; buffer: number };
  /** For each, the binder writes where binding `buffer` starts in its 128-byte line (its offset mod 128) into params byte `paramsByte`. */
  linePhases: { paramsByte: number; buffer: number }[];
  /** With sequenceRows: the row this command serves; "tokens", "keys.<l>" and "values.<l>" are that row's sequence's, at its position. */
  sequenceRow?: number;
}

export interface NativeRecordedForward {
  commands: NativeRecordedCommand[];
  /** With headPick: the LM head's tensor, over the rows of "normed". */
  headTensor?: string;
}
