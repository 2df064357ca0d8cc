// Chained decoding of the bigram model on the GPU backends: a chain equals
// one token per submission, chunking changes nothing, the CPU path gives
// the same tokens, long sampled chains follow the model's exact filtered
// distribution, and the runner double-buffers without blocking the loop.
import { afterAll, describe, expect, it } from 'vitest';

import {
  BigramChain,
  BigramModel,
  decodeBigramOnCpu,
  NoTokenError,
  numberFromFloat16,
  openDevice,
  type ChainSamplingOptions,
  type DispatchTable,
} from '../lib/index.js';
import { chiSquarePValue, exactDistribution } from './exact-distribution.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const SAMPLED: ChainSamplingOptions = {
  temperature: 0.9,
  topK: 20,
  topP: 0.9,
  minP: 0.02,
  seed: 1234,
  repeatPenalty: { penalty: 1.3, lastTokens: 6, frequencyPenalty: 0.1, presencePenalty: 0.05 },
  logitBias: { 3: 1.5, 7: -Infinity },
};

async function collect(chain: BigramChain, table: DispatchTable, start: number, count: number, chunkSize: number, doubleBuffered = true) {
  const tokens: number[] = [];
  for await (const chunk of chain.run(table, start, count, { chunkSize, doubleBuffered })) {
    expect(chunk.position).toBe(start + 1 + tokens.length);
    tokens.push(...chunk.tokens);
  }
  return tokens;
}

describe.each(GPU_BACKENDS)('%s device', (kind) => {
  const device = openDevice(kind);
  afterAll(() => device.dispose());
  const model = BigramModel.fromSeed({ vocabSize: 500, dim: 24, seed: 11 });
  const prompt = [17, 4, 250];

  describe.each([
    ['greedy', {} as ChainSamplingOptions],
    ['sampled', SAMPLED],
    // No edits and no histogram: the wide sampler's prepare and edit steps are left out.
    ['temperature only', { temperature: 0.8, topK: 0, topP: 1, minP: 0, seed: 99 } as ChainSamplingOptions],
  ])('%s', (_name, sampling) => {
    const chain = new BigramChain(model, device, { contextSize: 128 });
    const table = chain.tableFor(sampling);

    it('uses the argmax table only when it gives the same tokens', () => {
      const steps = {
        greedy: [],
        sampled: ['prepare', 'edit', 'count', 'filter', 'noise', 'pick'],
        'temperature only': ['count', 'filter', 'noise', 'pick'],
      }[_name]!;
      const pick = _name === 'greedy' ? ['argmax: slices', 'argmax: pick'] : steps.map((step) => `sample: ${step}`);
      expect(table.labels).toEqual(['embedding', 'lm head', ...pick]);
    });

    it('a chain of n tokens equals n one-token submissions, and every chunk size agrees', async () => {
      chain.writeTokens(0, prompt);
      const oneAtATime = await collect(chain, table, 2, 40, 1, false);
      for (const chunkSize of [3, 7, 40, 64]) {
        chain.writeTokens(0, prompt);
        // The chunk boundaries fall on different tokens each time: every
        // first and last token of a chunk is checked against the single steps.
        expect(await collect(chain, table, 2, 40, chunkSize)).toEqual(oneAtATime);
      }
      // Resuming in the middle: two runs of 20 equal one of 40.
      chain.writeTokens(0, prompt);
      const first = await collect(chain, table, 2, 20, 8);
      const second = await collect(chain, table, 22, 20, 8);
      expect([...first, ...second]).toEqual(oneAtATime);
    });

    it.each(['native', 'js'] as const)('the CPU path (%s forward and sampler) gives the same tokens', async (backend) => {
      chain.writeTokens(0, prompt);
      const gpu = await collect(chain, table, 2, 40, 16);
      expect([...decodeBigramOnCpu(model, prompt, 40, sampling, { backend })]).toEqual(gpu);
    });
  });

  it('the GPU logits equal the CPU forward (native and js) bit for bit', async () => {
    const chain = new BigramChain(model, device, { contextSize: 8 });
    for (const token of [0, 1, 250, 499]) {
      chain.writeTokens(0, [token]);
      for await (const _ of chain.run(chain.greedyTable, 0, 1)) void _;
      const gpu = chain.logits.readFloat16(0, model.vocabSize);
      expect(gpu).toEqual(model.logits(token, 'native'));
      expect(gpu).toEqual(model.logits(token, 'js'));
    }
  });

  it('a long sampled chain follows the exact filtered distribution of each transition (chi-square)', async () => {
    const small = BigramModel.fromSeed({ vocabSize: 12, dim: 4, seed: 5, logitScale: 1.5 });
    const filters = { temperature: 0.8, topK: 8, topP: 0.92, minP: 0.03 };
    const steps = 12000;
    const chain = new BigramChain(small, device, { contextSize: steps + 2 });
    chain.writeTokens(0, [0]);
    const sequence = [0, ...(await collect(chain, chain.sampledTable({ ...filters, seed: 99 }), 0, steps, 500))];
    const counts = Array.from({ length: 12 }, () => new Array<number>(12).fill(0));
    for (let i = 1; i < sequence.length; i++) counts[sequence[i - 1]][sequence[i]]++;
    let statistic = 0,
      freedom = 0,
      rows = 0;
    for (let a = 0; a < 12; a++) {
      const visits = counts[a].reduce((x, y) => x + y, 0);
      if (visits < 100) continue;
      const z = [...small.logits(a)].map(numberFromFloat16);
      const p = exactDistribution(z, filters);
      p.forEach((pi, b) => {
        if (pi === 0) expect(counts[a][b], `${a} -> ${b} is filtered out`).toBe(0);
      });
      const result = chiSquarePValue(counts[a], p);
      statistic += result.statistic;
      freedom += p.filter((x) => x > 0).length - 1;
      rows++;
    }
    expect(rows).toBeGreaterThanOrEqual(6);
    // The rows are independent given the visits: their statistics add up.
    const { default: cdf } = await import('@stdlib/stats-base-dists-chisquare-cdf');
    expect(1 - cdf(statistic, freedom)).toBeGreaterThan(0.001);
  });

  it('queues chunk k + 1 before handing out chunk k, and never blocks the event loop', async () => {
    const chain = new BigramChain(model, device, { contextSize: 256 });
    chain.writeTokens(0, [1]);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const inFlightAtYield: number[] = [];
    for await (const _ of chain.run(chain.greedyTable, 0, 200, { chunkSize: 25 })) {
      void _;
      inFlightAtYield.push(chain.inFlight);
    }
    clearInterval(timer);
    // The timer ran while the chunks were on the (emulated) GPU.
    expect(ticks).toBeGreaterThan(0);
    expect(inFlightAtYield).toEqual([1, 1, 1, 1, 1, 1, 1, 0]);
    const waited: number[] = [];
    for await (const _ of chain.run(chain.greedyTable, 0, 75, { chunkSize: 25, doubleBuffered: false })) {
      void _;
      waited.push(chain.inFlight);
    }
    expect(waited).toEqual([0, 0, 0]);
  });

  it('stops with NoTokenError when every token is banned, after the tokens before it', async () => {
    const tiny = BigramModel.fromSeed({ vocabSize: 4, dim: 2, seed: 1 });
    const chain = new BigramChain(tiny, device, { contextSize: 16 });
    chain.writeTokens(0, [2]);
    const ban = { 0: -Infinity, 1: -Infinity, 2: -Infinity, 3: -Infinity };
    const seen: number[] = [];
    await expect(async () => {
      for await (const chunk of chain.run(chain.sampledTable({ temperature: 1, seed: 1, logitBias: ban }), 0, 5)) seen.push(...chunk.tokens);
    }).rejects.toThrow(NoTokenError);
    expect(seen).toEqual([]);
  });

  it('refuses a chain longer than its sequence buffer, and a second run at once', async () => {
    const chain = new BigramChain(model, device, { contextSize: 10 });
    chain.writeTokens(0, [1]);
    await expect(chain.run(chain.greedyTable, 0, 10).next()).rejects.toThrow(
      'Expected at most 9 (the sequence buffer holds 10 tokens) for count but received 10 (number)',
    );
    const first = chain.run(chain.greedyTable, 0, 9, { chunkSize: 1 });
    await first.next();
    await expect(chain.run(chain.greedyTable, 0, 2).next()).rejects.toThrow('This chain is already running');
    expect(() => chain.writeTokens(0, [1])).toThrow('writeTokens: a chain is running on this sequence');
    await first.return(undefined);
    chain.writeTokens(0, [1]);
  });

  it('rejects chain sampling options the chain sets itself, and bad tokens', () => {
    const chain = new BigramChain(model, device, { contextSize: 4 });
    expect(() => chain.writeTokens(0, [1, 500])).toThrow('Expected a token id from 0 to 499 for tokens[1] but received 500 (number)');
    expect(() => chain.writeTokens(0, [1.5])).toThrow('Expected a token id from 0 to 499 for tokens[0] but received 1.5 (number)');
    expect(() => chain.writeTokens(3, [1, 2])).toThrow(
      'Expected an integer from 0 to 2 (the tokens must fit in contextSize 4) for position but received 3 (number)',
    );
    expect(() => chain.sampledTable({ position: 3 } as ChainSamplingOptions)).toThrow(
      'Unknown option position: a chain sets position and history per token, binds masks as buffers and runs on its own device',
    );
    expect(() => chain.sampledTable({ temperature: -1 })).toThrow('Expected a number from 0 to 1e+30 for temperature but received -1 (number)');
  });
});

describe('devices', () => {
  it('metal cannot open on Linux and says why; there is no fallback', () => {
    if (process.platform === 'darwin') return;
    expect(() => openDevice('metal')).toThrow(/The metal backend is not available: Metal needs macOS on Apple silicon/);
  });

  it('the emulated device cannot compile kernels from source, and says so', () => {
    const device = openDevice('emulated');
    expect(() => device.addKernelSource('kernel void f() {}')).toThrow(
      'addKernelSource: the emulated device runs only the kernels compiled into the addon (metal/*.metal, listed by kernelNames); kernels from source need the Metal device',
    );
    expect(device.kernelNames()).toEqual([
      'md_add_f32',
      'md_argmax_f16',
      'md_argmax_f32',
      'md_argmax_pick_f16',
      'md_argmax_pick_f32',
      'md_argmax_slices_f16',
      'md_argmax_slices_f32',
      'md_attention_f16',
      'md_attention_f32',
      'md_attention_merge_f32',
      'md_attention_q8_0',
      'md_draft_probability_f16',
      'md_embed_f16',
      'md_embed_rows_bf16',
      'md_embed_rows_f16',
      'md_embed_rows_f32',
      'md_embed_rows_iq4_nl',
      'md_embed_rows_iq4_xs',
      'md_embed_rows_q2_k',
      'md_embed_rows_q3_k',
      'md_embed_rows_q4_0',
      'md_embed_rows_q4_1',
      'md_embed_rows_q4_k',
      'md_embed_rows_q5_0',
      'md_embed_rows_q5_1',
      'md_embed_rows_q5_k',
      'md_embed_rows_q6_k',
      'md_embed_rows_q8_0',
      'md_exp_values',
      'md_fp_contract_probe',
      'md_geglu_f32',
      'md_half_from_f32',
      'md_head_sample_bf16',
      'md_head_sample_f16',
      'md_head_sample_f32',
      'md_head_sample_iq4_nl',
      'md_head_sample_iq4_xs',
      'md_head_sample_pick',
      'md_head_sample_q2_k',
      'md_head_sample_q3_k',
      'md_head_sample_q4_0',
      'md_head_sample_q4_1',
      'md_head_sample_q4_k',
      'md_head_sample_q5_0',
      'md_head_sample_q5_1',
      'md_head_sample_q5_k',
      'md_head_sample_q6_k',
      'md_head_sample_q8_0',
      'md_kv_store_f16',
      'md_kv_store_f32',
      'md_kv_store_q8_0',
      'md_lm_head_f16',
      'md_matmul_bf16',
      'md_matmul_f16',
      'md_matmul_f32',
      'md_matmul_id_bf16',
      'md_matmul_id_f16',
      'md_matmul_id_f32',
      'md_matmul_id_iq4_nl',
      'md_matmul_id_iq4_xs',
      'md_matmul_id_q2_k',
      'md_matmul_id_q3_k',
      'md_matmul_id_q4_0',
      'md_matmul_id_q4_1',
      'md_matmul_id_q4_k',
      'md_matmul_id_q5_0',
      'md_matmul_id_q5_1',
      'md_matmul_id_q5_k',
      'md_matmul_id_q6_k',
      'md_matmul_id_q8_0',
      'md_matmul_iq4_nl',
      'md_matmul_iq4_xs',
      'md_matmul_q2_k',
      'md_matmul_q3_k',
      'md_matmul_q4_0',
      'md_matmul_q4_1',
      'md_matmul_q4_k',
      'md_matmul_q5_0',
      'md_matmul_q5_1',
      'md_matmul_q5_k',
      'md_matmul_q6_k',
      'md_matmul_q8_0',
      'md_matvec_batch_bf16',
      'md_matvec_batch_f16',
      'md_matvec_batch_f32',
      'md_matvec_batch_iq4_nl',
      'md_matvec_batch_iq4_xs',
      'md_matvec_batch_q2_k',
      'md_matvec_batch_q3_k',
      'md_matvec_batch_q4_0',
      'md_matvec_batch_q4_1',
      'md_matvec_batch_q4_k',
      'md_matvec_batch_q5_0',
      'md_matvec_batch_q5_1',
      'md_matvec_batch_q5_k',
      'md_matvec_batch_q6_k',
      'md_matvec_batch_q8_0',
      'md_matvec_bf16',
      'md_matvec_f16',
      'md_matvec_f32',
      'md_matvec_id_bf16',
      'md_matvec_id_f16',
      'md_matvec_id_f32',
      'md_matvec_id_iq4_nl',
      'md_matvec_id_iq4_xs',
      'md_matvec_id_q2_k',
      'md_matvec_id_q3_k',
      'md_matvec_id_q4_0',
      'md_matvec_id_q4_1',
      'md_matvec_id_q4_k',
      'md_matvec_id_q5_0',
      'md_matvec_id_q5_1',
      'md_matvec_id_q5_k',
      'md_matvec_id_q6_k',
      'md_matvec_id_q8_0',
      'md_matvec_iq4_nl',
      'md_matvec_iq4_xs',
      'md_matvec_q2_k',
      'md_matvec_q3_k',
      'md_matvec_q4_0',
      'md_matvec_q4_1',
      'md_matvec_q4_k',
      'md_matvec_q5_0',
      'md_matvec_q5_1',
      'md_matvec_q5_k',
      'md_matvec_q6_k',
      'md_matvec_q8_0',
      'md_moe_group_u32',
      'md_moe_route_f32',
      'md_moe_sum_f32',
      'md_noise_cells',
      'md_rms_norm_f32',
      'md_rope_f32',
      'md_sample_f16',
      'md_sample_wide_count_f16',
      'md_sample_wide_edit_f16',
      'md_sample_wide_filter_f16',
      'md_sample_wide_noise_f16',
      'md_sample_wide_pick_f16',
      'md_sample_wide_prepare_f16',
      'md_simd_layout_probe',
      'md_swiglu_f32',
    ]);
    device.dispose();
    expect(() => device.kernelNames()).toThrow('The emulated device was disposed');
  });
});
