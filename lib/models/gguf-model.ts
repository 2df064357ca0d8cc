// gguf-model.ts: a GGUF Llama-family model as a DecodeModel. The weights
// stay in the memory-mapped file; each sequence has its own F16 KV cache in
// the addon, and every forward pass runs on the model's own thread (never
// on the event loop). The logits a sequence returns are a view of native
// memory that the next evaluate() overwrites.
import { BackendUnavailableError, invalidParameterError } from '../errors.js';
import { runsKernels, type BackendName } from '../backends.js';
import type { ByteTokenizer } from '../generate/byte-tokenizer.js';
import type { DecodeModel, Logits, ModelSequence } from '../generate/model.js';
import type { GgufTokenizer } from '../gguf/gguf-tokenizer.js';
import { sharedDevice } from '../gpu/device.js';
import { createGrammar, createGrammarForJsonSchema, type CreateGrammarOptions, type Grammar } from '../grammar/grammar.js';
import type { SchemaType } from '../grammar/schema-type.js';
import { disposeModelGrammars } from '../grammar/model-grammars.js';
import type { GrammarSpec, JsonSchema } from '../grammar/grammar-spec.js';
import type { NativeAddon, NativeModelConfig, NativeTensorEntry, NativeTransformer, NativeTransformerSequence } from '../native/contract.js';
import { SequenceBatcher } from './sequence-batcher.js';
import { ChainBatcher } from './chain-batcher.js';
import { SequenceRowsTables } from './gguf-sequence-rows.js';
import { SamplingPacker } from '../native/native-sampler.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import { loadAddon } from '../native/load-addon.js';
import { Embedding, EmbeddingContext, type EmbeddingSequence } from './embedding-context.js';
import { GgufForwardTable } from './gguf-forward-table.js';
import { autoContextSize, checkKvCacheFits, kvCacheTensorType, type KvCacheType } from './kv-cache-type.js';
import { DEFAULT_CONTEXT_SIZE, resolveSessionOptions } from '../generate/generate-options.js';
import { GpuWeights } from './gpu-weights.js';
import { TableSequence } from '../gpu/table-sequence.js';
import type { BackendChoice, ResolvedSampling } from '../sampling-options.js';
import type { ChatTemplate } from '../tokenizers/chat-template.js';

export interface GgufModelInfo {
  path: string;
  /** general.architecture: 'llama', 'qwen2' or 'qwen3'. */
  architecture: string;
  /** general.name, when the file has one. */
  name?: string;
  config: Readonly<NativeModelConfig>;
  /** Tensor type name -> how many tensors of it. */
  tensorTypes: Readonly<Record<string, number>>;
  fileSize: number;
  /** The context length the model was trained with, when the file says. */
  trainedContextLength?: number;
  /** <arch>.pooling_type: how createEmbeddingContext() pools a text's hidden states ('none': the last token's, as llama.cpp). */
  poolingType: 'none' | 'mean' | 'cls' | 'last' | 'rank';
  /** Threads of the forward pass (0 when vocabOnly). */
  threads: number;
  /** The dot kernels: 'amx', 'avx512', 'avx-vnni', 'avx2', 'accelerate', 'neon-i8mm', 'neon' or 'portable' ('none' when vocabOnly). */
  cpuKernels: string;
  /** Loaded with { vocabOnly: true }: a tokenizer and metadata, no weights. */
  vocabOnly: boolean;
  /** The KV cache type of its sequences (loadModel's kvCacheType). */
  kvCacheType: KvCacheType;
  /** The most sequences open at once (loadModel's maxSequences; undefined: as many as memory holds). */
  maxSequences?: number;
  /** Tokens of a prompt evaluated between two decode passes of the other CPU sequences (loadModel's prefillChunk). */
  prefillChunk: number;
  /** Bytes of the matrices repacked for the CPU's tiles while loading (loadModel's repack): 0 when none were. */
  repackedBytes: number;
}

export class GgufModel implements DecodeModel {
  readonly vocabSize: number;
  /** The file's vocabulary; a ByteTokenizer when the file has none. */
  readonly tokenizer: GgufTokenizer | ByteTokenizer;
  readonly eosTokens: readonly number[];
  readonly bosToken: number | undefined;
  readonly info: GgufModelInfo;
  /** The file's chat template (tokenizer.chat_template), when it has one. */
  readonly chatTemplate: ChatTemplate | undefined;
  readonly #native: NativeTransformer | undefined; // undefined: vocabOnly
  readonly #batchSize: number;
  readonly #tensors: readonly NativeTensorEntry[];
  readonly #sequences = new Set<GgufSequence>();
  // The CPU sequences' one-token steps, evaluated together (made with the first sequence).
  #batcher: SequenceBatcher | undefined;
  // GPU sequences hold device buffers (their KV caches), freed with the
  // model; the weights are made once per device and shared by them.
  readonly #gpuSequences = new Set<TableSequence>();
  readonly #gpuTables = new Set<GgufForwardTable>(); // embedding contexts' tables
  readonly #gpuWeights = new Map<string, GpuWeights>();
  // The GPU sequences' chains, run together: one batcher per backend and context size (a batched table's rows share their shape).
  readonly #chainBatchers = new Map<string, ChainBatcher>();
  #disposed = false;

  /** @internal loadModel() makes models. */
  constructor(
    native: NativeTransformer | undefined,
    info: GgufModelInfo,
    tokenizer: GgufTokenizer | ByteTokenizer,
    eosTokens: readonly number[],
    batchSize: number,
    tensors: readonly NativeTensorEntry[],
    chatTemplate?: ChatTemplate,
  ) {
    this.#tensors = tensors;
    this.#native = native;
    this.chatTemplate = chatTemplate;
    this.info = info;
    this.vocabSize = info.config.vocabSize;
    this.tokenizer = tokenizer;
    this.eosTokens = eosTokens;
    this.bosToken = 'addBosToken' in tokenizer && tokenizer.addBosToken ? tokenizer.bosToken : undefined;
    this.#batchSize = batchSize;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /**
   * 'native' (and 'auto', which picks it): the forward pass in the addon on
   * the CPU. 'emulated' and 'metal': the forward pass as dispatch tables on
   * that device (batched prefill, chained decode with the sampling on the
   * GPU; the weights are the mapped file, not copied; proven on the
   * emulator, never run on a Mac). 'js' is an error: there is no
   * TypeScript transformer.
   */
  /**
   * node-llama-cpp's createEmbeddingContext(): texts' embeddings on a
   * sequence of their own, pooled as the file declares (poolingType), on
   * the CPU ('native', the default) or the GPU tables ('metal',
   * 'emulated'). contextSize: the longest text in tokens, plus one
   * (default 'auto').
   */
  createEmbeddingContext(options: { contextSize?: number | 'auto'; backend?: 'native' | 'metal' | 'emulated' } = {}): EmbeddingContext {
    if (this.#disposed) throw new Error('createEmbeddingContext: the model was disposed');
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object { contextSize, backend }', options, 'type');
    checkKnownKeys(options, new Set(['contextSize', 'backend']), '');
    const backend = options.backend ?? 'native';
    if (backend !== 'native' && backend !== 'metal' && backend !== 'emulated') {
      throw invalidParameterError('backend', "'native', 'metal' or 'emulated'", backend, 'range');
    }
    const pooling = this.info.poolingType;
    if (pooling === 'rank')
      throw new Error(`createEmbeddingContext: ${this.info.path} declares pooling_type rank (a reranker), which is not supported`);
    if (this.#native === undefined)
      throw new Error(`createEmbeddingContext: ${this.info.path} was loaded with { vocabOnly: true }: it has no weights`);
    const resolved = resolveSessionOptions({ contextSize: options.contextSize });
    const contextSize = resolved.contextSize === 'auto' ? this.autoContextSize().contextSize : resolved.contextSize;
    let sequence: EmbeddingSequence;
    if (backend === 'native') {
      sequence = this.#nativeSequence(contextSize).native;
    } else {
      const table = this.#forwardTable(backend, contextSize);
      const native = this.#native;
      const tables = this.#gpuTables;
      tables.add(table);
      sequence = {
        embed: async (tokens, rows) => {
          const problem = native.fileProblem();
          if (problem !== undefined) throw new Error(problem);
          return table.embedRows(tokens, rows);
        },
        dispose: () => {
          if (tables.delete(table)) table.dispose();
        },
      };
    }
    const tokenizer = this.tokenizer;
    const bos = this.bosToken;
    const eos = 'addEosToken' in tokenizer && tokenizer.addEosToken ? tokenizer.eosToken : undefined;
    return new EmbeddingContext({
      contextSize,
      pooling,
      backend,
      embeddingLength: this.info.config.embeddingLength,
      sequence,
      tokens: async (text) => {
        const ids: number[] = Array.from('encodeAsync' in tokenizer ? await tokenizer.encodeAsync(text) : tokenizer.encode(text));
        if (bos !== undefined && ids[0] !== bos) ids.unshift(bos);
        if (eos !== undefined && ids.at(-1) !== eos) ids.push(eos);
        return ids;
      },
    });
  }

  // A CPU sequence of this model: its KV cache checked against the machine's memory, then made.
  #nativeSequence(contextSize: number): { native: NativeTransformerSequence; addon: NativeAddon } {
    const addon = loadAddon(); // loaded: the model is the addon's
    if (!addon.ok) throw new BackendUnavailableError('native', addon.reason);
    this.checkSequencesFit(1, contextSize);
    const cacheType = kvCacheTensorType(this.info.kvCacheType, addon.addon.tensorTypes).id;
    return { native: this.#native!.createSequence(contextSize, this.#batchSize, cacheType), addon: addon.addon };
  }

  /**
   * Checks that `count` more sequences of `contextSize` positions can open:
   * within loadModel's maxSequences, and their KV caches in this machine's
   * memory beside those of the sequences open. A RangeError that says which
   * does not; a server checks all its slots this way before it serves.
   */
  checkSequencesFit(count: number, contextSize: number): void {
    const open = this.#openSequences();
    const max = this.info.maxSequences;
    if (max !== undefined && open.length + count > max) {
      throw new RangeError(
        `${open.length + count} sequences would be open at once (${open.length} open, ${count} more), and loadModel's maxSequences is ${max}: dispose some first (a Session, a ChatSession or a finished generate() frees its own), or load the model with a larger maxSequences`,
      );
    }
    const addon = loadAddon();
    if (!addon.ok) return; // no sequence opens without the addon: openSequence says why
    const held = { bytes: open.reduce((sum, s) => sum + s.kvCacheBytes, 0), sequences: open.length };
    checkKvCacheFits(this.info.config, this.info.kvCacheType, addon.addon.tensorTypes, contextSize, undefined, held, count);
  }

  // The sequences open now, CPU and GPU, with the bytes of their KV caches.
  #openSequences(): { kvCacheBytes: number }[] {
    return [...this.#sequences, ...[...this.#gpuSequences].filter((s) => !s.disposed)];
  }

  // A GPU forward table of this model on `backend` (its weights uploaded once per backend).
  #forwardTable(backend: 'metal' | 'emulated', contextSize: number): GgufForwardTable {
    const addon = loadAddon();
    if (!addon.ok) throw new BackendUnavailableError(backend, addon.reason);
    this.checkSequencesFit(1, contextSize);
    const device = sharedDevice(backend);
    let weights = this.#gpuWeights.get(backend);
    if (weights === undefined) {
      weights = new GpuWeights(device, { path: this.info.path, model: this.#native, tensors: this.#tensors, types: addon.addon.tensorTypes });
      this.#gpuWeights.set(backend, weights);
    }
    return new GgufForwardTable(device, this.info.config, weights, contextSize, { kvCacheType: this.info.kvCacheType, cacheShifter: this.#native });
  }

  // The batcher of the GPU sequences like `tables` (backend and context size).
  #chainBatcher(backend: 'metal' | 'emulated', tables: GgufForwardTable): ChainBatcher {
    const key = `${backend}:${tables.contextSize}`;
    let batcher = this.#chainBatchers.get(key);
    if (batcher === undefined) {
      const weights = this.#gpuWeights.get(backend)!;
      const config = this.info.config;
      batcher = new ChainBatcher(() => new SequenceRowsTables(tables.device, config, weights, tables.recordShape));
      this.#chainBatchers.set(key, batcher);
    }
    return batcher;
  }

  /** The embedding of one text: createEmbeddingContext().getEmbeddingFor(text), the context disposed after. */
  async getEmbeddingFor(input: string | readonly number[]): Promise<Embedding> {
    const context = this.createEmbeddingContext();
    try {
      return await context.getEmbeddingFor(input);
    } finally {
      await context.dispose();
    }
  }

  /** contextSize 'auto': the trained context length, or what fits in half of the free memory when that is less. */
  autoContextSize(): { contextSize: number; reason: string } {
    const addon = loadAddon();
    if (!addon.ok) return { contextSize: DEFAULT_CONTEXT_SIZE, reason: `the default 4096 (the addon did not load: ${addon.reason})` };
    return autoContextSize(this.info.config, this.info.kvCacheType, addon.addon.tensorTypes, this.info.trainedContextLength);
  }

  /** What batching the GPU sequences' chains did: passes run, the sequences' chunks in them, the most in one, and the steps of passes of two or more. */
  get chainBatchStats(): { passes: number; rows: number; largest: number; batchedSteps: number } {
    const sum = { passes: 0, rows: 0, largest: 0, batchedSteps: 0 };
    for (const b of this.#chainBatchers.values()) {
      sum.passes += b.stats.passes;
      sum.rows += b.stats.rows;
      sum.largest = Math.max(sum.largest, b.stats.largest);
      sum.batchedSteps += b.stats.batchedSteps;
    }
    return sum;
  }

  /** What batching the CPU sequences did: passes run, steps in them, the most in one; turns between passes (prompt chunks among them). */
  get batchStats(): { passes: number; steps: number; largest: number; turns: number } {
    return { ...(this.#batcher?.stats ?? { passes: 0, steps: 0, largest: 0, turns: 0 }) };
  }

  openSequence(options: { backend: 'native' | 'auto'; contextSize: number }): GgufSequence;
  openSequence(options?: { backend?: BackendChoice; contextSize?: number }): ModelSequence;
  /** A sequence of this model: Session's options, checked the same way (defaults 'auto' and contextSize 'auto'). */
  openSequence(options: { backend?: BackendChoice; contextSize?: number } = {}): ModelSequence {
    if (this.#disposed) throw new Error('openSequence: the model was disposed');
    if (this.#native === undefined) {
      throw new Error(
        `openSequence: ${this.info.path} was loaded with { vocabOnly: true }: it has a tokenizer but no weights; load it without vocabOnly to generate`,
      );
    }
    const resolved = resolveSessionOptions(options);
    const backend = resolved.backend;
    const contextSize = resolved.contextSize === 'auto' ? this.autoContextSize().contextSize : resolved.contextSize;
    if (runsKernels(backend)) {
      const native = this.#native;
      const tables = this.#forwardTable(backend, contextSize);
      const batcher = this.#chainBatcher(backend, tables);
      const sequence = new TableSequence(tables, () => native.fileProblem(), {
        run: (sampling, start, count, chunkSize) => batcher.run(tables, sampling, start, count, chunkSize),
        release: () => batcher.forget(tables),
      });
      this.#gpuSequences.add(sequence);
      return sequence;
    }
    if (backend === 'js')
      throw new BackendUnavailableError('js', "a GGUF model's forward pass runs in the native addon; there is no TypeScript transformer");
    if (backend !== 'native' && backend !== 'auto') {
      throw invalidParameterError('backend', "'auto', 'native', 'metal' or 'emulated' for a GGUF model", backend, 'range');
    }
    const { native, addon } = this.#nativeSequence(contextSize);
    this.#batcher ??= new SequenceBatcher(this.#native, this.info.prefillChunk);
    const sequence = new GgufSequence(native, contextSize, (s) => this.#sequences.delete(s), addon, this.#batcher);
    this.#sequences.add(sequence);
    return sequence;
  }

  /**
   * A JSON schema, regex or EBNF grammar compiled for this model's
   * vocabulary on a thread of its own (cached): the grammar option of
   * generate() and prompt().
   */
  async createGrammar<T = unknown>(spec: GrammarSpec, options?: CreateGrammarOptions): Promise<Grammar<T>> {
    if (this.#disposed) throw new Error('createGrammar: the model was disposed');
    return createGrammar<T>(this, spec, options);
  }

  /** As node-llama-cpp's llama.createGrammarForJsonSchema: JSON that validates against `schema`; parse() reads the reply. */
  createGrammarForJsonSchema<const S extends JsonSchema>(schema: S, options?: CreateGrammarOptions): Promise<Grammar<SchemaType<S>>>;
  /** The same, with parse()'s type given: model.createGrammarForJsonSchema<MyType>(schema). */
  createGrammarForJsonSchema<T>(schema: JsonSchema, options?: CreateGrammarOptions): Promise<Grammar<T>>;
  async createGrammarForJsonSchema<T>(schema: JsonSchema, options?: CreateGrammarOptions): Promise<Grammar<T>> {
    if (this.#disposed) throw new Error('createGrammarForJsonSchema: the model was disposed');
    return createGrammarForJsonSchema<T>(this, schema, options);
  }

  /** Frees the KV caches of every sequence, ends the grammars' threads and unmaps the file once work in flight ends. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const s of [...this.#sequences]) s.dispose();
    for (const s of this.#gpuSequences) s.dispose();
    for (const t of this.#gpuTables) t.dispose();
    for (const b of this.#chainBatchers.values()) b.dispose();
    this.#gpuTables.clear();
    for (const w of this.#gpuWeights.values()) w.dispose();
    if ('dispose' in this.tokenizer) this.tokenizer.dispose();
    this.chatTemplate?.dispose();
    disposeModelGrammars(this);
    this.#native?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }
}

const NO_LOGITS = new Float32Array(0); // evaluateAndPick packs options only

/** One sequence of a GgufModel: its KV cache and logits in the addon. */
export class GgufSequence implements ModelSequence {
  readonly backend: BackendName = 'native';
  readonly chain = undefined;
  readonly #native: NativeTransformerSequence;
  readonly #onDispose: (s: GgufSequence) => void;
  readonly #packer: SamplingPacker;
  readonly #batcher: SequenceBatcher;
  // The forward pass in flight: an aborted generation leaves it running,
  // and the next evaluate() waits for it instead of failing.
  #inFlight: Promise<unknown> = Promise.resolve();
  #disposed = false;

  /** @internal GgufModel.openSequence() makes sequences. */
  constructor(
    native: NativeTransformerSequence,
    readonly contextSize: number,
    onDispose: (s: GgufSequence) => void,
    addon: NativeAddon,
    batcher: SequenceBatcher,
  ) {
    this.#native = native;
    this.#batcher = batcher;
    this.#packer = new SamplingPacker(addon);
    this.#onDispose = onDispose;
  }

  /** Positions the KV cache holds. */
  get length(): number {
    return this.#native.length;
  }

  /** Bytes of the KV cache (contextSize positions, in the model's kvCacheType). */
  get kvCacheBytes(): number {
    return this.#native.kvCacheBytes;
  }

  async evaluate(tokens: Uint32Array, position: number): Promise<Logits> {
    await this.#inFlight.catch(() => undefined);
    if (this.#disposed) throw new Error('evaluate: the sequence was disposed');
    // One token (a decode step) rides the model's next pass with the other sequences' steps; a prompt takes turns between passes.
    const native = this.#native;
    const evaluate = (chunk: Uint32Array, at: number) => native.evaluate(chunk, at);
    const run =
      tokens.length === 1
        ? this.#batcher.step(native, tokens[0]!, position, null)
        : this.#batcher.prefill(native, tokens, position, evaluate, evaluate);
    this.#inFlight = run;
    await run;
    return this.#native.logits;
  }

  async evaluateAndPick(tokens: Uint32Array, position: number, sampling: ResolvedSampling): Promise<number> {
    await this.#inFlight.catch(() => undefined);
    if (this.#disposed) throw new Error('evaluateAndPick: the sequence was disposed');
    const [, slots, , biasTokens, biasValues] = this.#packer.pack(NO_LOGITS, sampling);
    const native = this.#native;
    const run =
      tokens.length === 1
        ? this.#batcher.step(native, tokens[0]!, position, [slots, biasTokens, biasValues])
        : this.#batcher.prefill(
            native,
            tokens,
            position,
            (chunk, at) => native.evaluate(chunk, at),
            (chunk, at) => native.evaluateAndPick(chunk, at, slots, biasTokens, biasValues),
          );
    this.#inFlight = run;
    return run;
  }

  async evaluateRows(tokens: Uint32Array, position: number, rows: number): Promise<Logits[]> {
    await this.#inFlight.catch(() => undefined);
    if (this.#disposed) throw new Error('evaluateRows: the sequence was disposed');
    if (rows === 1) return [(await this.evaluate(tokens, position)).slice()];
    const native = this.#native;
    const run = this.#batcher.turn(native, () => native.evaluate(tokens, position, rows));
    this.#inFlight = run;
    const all = await run;
    const vocab = this.#native.logits.length;
    return Array.from({ length: rows }, (_, r) => all.subarray(r * vocab, (r + 1) * vocab));
  }

  // The native cache holds at least `evaluated` positions (it may hold more, which the shift moves too).
  async shift(keep: number, discard: number, evaluated: number): Promise<void> {
    await this.#inFlight.catch(() => undefined);
    if (this.#disposed) throw new Error('shift: the sequence was disposed');
    if (keep + discard > evaluated) throw new RangeError(`shift: keep ${keep} + discard ${discard} is over the ${evaluated} positions evaluated`);
    const run = this.#native.shift(keep, discard);
    this.#inFlight = run;
    await run;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#batcher.forget(this.#native);
    this.#native.dispose();
    this.#onDispose(this);
  }
}
