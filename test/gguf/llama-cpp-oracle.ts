// llama-cpp-oracle.ts: llama.cpp, the reference implementation, through
// node-llama-cpp's prebuilt CPU binaries: the logits of a GGUF file for a
// token sequence, and its greedy continuation.
import { getLlama, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';

let llama: Promise<Llama> | undefined;

export function llamaCpp(): Promise<Llama> {
  // CPU only, prebuilt binaries only (never a build or a download in a test).
  llama ??= getLlama({ gpu: false, build: 'never', logLevel: 'error' as never, progressLogs: false });
  return llama;
}

export interface OracleModel {
  /** Logits after each prefix tokens[0..i] for i in `at` (all positions by default). */
  logits(tokens: readonly number[], at?: readonly number[]): Promise<Float32Array[]>;
  /**
   * llama.cpp's context shift: `tokens` evaluated, positions keep .. keep +
   * discard - 1 erased (node-llama-cpp's eraseContextTokenRanges: the cells
   * removed, the later ones' positions moved down, their keys rotated at
   * the next decode), then the logits after `next`.
   */
  shiftedLogits(tokens: readonly number[], keep: number, discard: number, next: number): Promise<Float32Array>;
  /** `count` greedy tokens after `prompt`. */
  greedy(prompt: readonly number[], count: number): Promise<number[]>;
  dispose(): Promise<void>;
}

/**
 * kvCacheType: llama.cpp's K and V cache type (default F16, its own). A Q8_0
 * cache takes llama.cpp's flash-attention path, which a quantized V needs.
 */
export async function oracleModel(path: string, threads = 2, kvCacheType: 'F16' | 'F32' | 'Q8_0' = 'F16'): Promise<OracleModel> {
  const model: LlamaModel = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0 });
  const newContext = () =>
    model.createContext({
      contextSize: 512,
      sequences: 1,
      threads,
      flashAttention: kvCacheType === 'Q8_0',
      batchSize: 512,
      experimentalKvCacheKeyType: kvCacheType,
      experimentalKvCacheValueType: kvCacheType,
    });
  return {
    async logits(tokens, at) {
      const context = await newContext();
      try {
        const wanted = new Set(at ?? tokens.map((_, i) => i));
        const input = tokens.map((t, i) => (wanted.has(i) ? ([t as Token, { generateNext: { logits: true } }] as const) : (t as Token)));
        const out = await context.getSequence().controlledEvaluate(input as never);
        const rows: Float32Array[] = [];
        out.forEach((item, i) => {
          if (!wanted.has(i)) return;
          const logits = (item as { next?: { logits?: Map<Token, number> } })?.next?.logits;
          if (!logits) throw new Error(`llama.cpp returned no logits at position ${i}`);
          const full = new Float32Array(logits.size);
          for (const [token, value] of logits) full[token] = value;
          rows.push(full);
        });
        return rows;
      } finally {
        await context.dispose();
      }
    },
    async shiftedLogits(tokens, keep, discard, next) {
      const context = await newContext();
      try {
        const sequence = context.getSequence();
        await sequence.controlledEvaluate(tokens as Token[]);
        await sequence.eraseContextTokenRanges([{ start: keep, end: keep + discard }]);
        const out = await sequence.controlledEvaluate([[next as Token, { generateNext: { logits: true } }]] as never);
        const logits = (out[0] as { next?: { logits?: Map<Token, number> } })?.next?.logits;
        if (!logits) throw new Error('llama.cpp returned no logits after the shift');
        const full = new Float32Array(logits.size);
        for (const [token, value] of logits) full[token] = value;
        return full;
      } finally {
        await context.dispose();
      }
    },
    async greedy(prompt, count) {
      const context = await newContext();
      try {
        const out: number[] = [];
        for await (const token of context.getSequence().evaluate(prompt as Token[], { temperature: 0, yieldEogToken: true })) {
          out.push(token);
          if (out.length === count) break;
        }
        return out;
      } finally {
        await context.dispose();
      }
    },
    async dispose() {
      await model.dispose();
    },
  };
}
