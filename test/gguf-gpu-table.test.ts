// gguf-gpu-table.test.ts: a GGUF model's whole one-token forward pass as
// one dispatch table (lib/models/gguf-forward-table.ts), run on the
// emulated device: the same .metal kernels a Mac runs, compiled as C++.
// Against the CPU forward pass (the one proven against llama.cpp), for
// every architecture variant x every weight type the CPU reads:
// - logits at every position within the CPU issue's tolerances: 0.05 for
//   F32 and F16 weights, 0.3 for quantized ones and BF16 (the CPU rounds
//   activations to Q8_0, Q8_K or BF16 as llama.cpp's CPU backend does; the
//   GPU multiplies float activations, as llama.cpp's Metal backend does);
// - each step's argmax, written by the table at p + 1, is the CPU's,
//   unless the CPU's top two are within twice the tolerance (a near tie);
// - a chain of 8 tokens in one submission equals 8 one-token submissions
//   (of the table with the LM head fused into the pick: the same tokens);
// - generate() and Session chain it (greedy: the CPU's tokens but at a
//   near tie; stops rewind and resume), speculative verification gives
//   the chain's tokens, and a sampled token follows the exact filtered
//   distribution of the GPU's logits (chi-square).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { BackendUnavailableError, generate, loadModel, openDevice, Session } from '../lib/index.js';
import { float16FromNumber, numberFromFloat16 } from '../lib/float16.js';
import { readGgufHeader } from '../lib/gguf/read-header.js';
import { GgufForwardTable, type ForwardTableOptions } from '../lib/models/gguf-forward-table.js';
import { GpuWeights } from '../lib/models/gpu-weights.js';
import { loadAddon } from '../lib/native/load-addon.js';
import type { TypeName } from './gguf/dequantize.js';
import { isMix, type MixName } from './gguf/quant-mix.js';
import { writeRandomModel } from './gguf/random-model.js';
import { GPU_VARIANTS, LLAMA_ONLY_TYPES, typesFor, variantSpec } from './gguf/variants.js';
import { chiSquarePValue, exactDistribution } from './exact-distribution.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-gpu-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TYPES: (TypeName | MixName)[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q4_K', 'Q5_K', 'Q6_K', 'Q4_K_M'];
const PROMPT = [1, 17, 42, 99, 7, 250, 3, 128];
const CONTEXT = 32;
type GpuBackend = (typeof GPU_BACKENDS)[number];

async function tableFor(backend: GpuBackend, path: string, without?: string, options: ForwardTableOptions = {}, context = CONTEXT) {
  const model = await loadModel(path, { threads: 1 });
  const header = await readGgufHeader(path);
  const device = openDevice(backend);
  const addon = loadAddon();
  if (!addon.ok) throw new Error(addon.reason);
  // `without`: a type left out of the type table, as a file of an unknown type would be.
  const types = addon.addon.tensorTypes.filter((t) => t.name !== without);
  try {
    const weights = new GpuWeights(device, { path, tensors: header.tensors, types });
    const table = new GgufForwardTable(device, model.info.config, weights, context, options);
    return { model, device, table, close: () => (table.dispose(), weights.dispose(), device.dispose(), model.dispose()) };
  } catch (error) {
    device.dispose();
    model.dispose();
    throw error;
  }
}

const argmax = (row: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
};
const maxDifference = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
};
const runnerUp = (row: ArrayLike<number>, best: number) => {
  let second = -Infinity;
  for (let i = 0; i < row.length; i++) if (i !== best) second = Math.max(second, row[i]);
  return second;
};

// Every test below on each GPU backend of the suite (helpers.ts).
describe.each(GPU_BACKENDS)('on %s', (backend) => {
  describe.each(GPU_VARIANTS)('%s', (variant) => {
    test.each(typesFor(variant, TYPES))(
      '%s: logits at every position within the tolerance of the CPU; argmax at p + 1; a chain equals single steps; batched prefill and split attention',
      async (type) => {
        const path = join(dir, `${variant}-${type}.gguf`);
        await writeRandomModel(path, variantSpec(variant, type, 3));
        // BF16 counts as quantized here: the CPU rounds activations to BF16
        // (8 bits of mantissa) before the dot, as llama.cpp's CPU backend does.
        // The Q4_K_M mix measured 0.33 (llama3) and 0.36 (qwen3), where their
        // tied Q6_K head alone measured 0.28: both types' activation roundings
        // add up in the mix, so its bound is 0.4. IQ4_XS measured 0.302
        // (llama3, position 5): its activations are rounded to Q8_K, one
        // scale per 256 values, against codebook weights up to 127 x 31 times
        // the block's d; its bound is 0.4 too.
        // qwen3moe's quantized types take 0.4 too (the test of its every type below says why).
        const tolerance = type === 'F32' || type === 'F16' ? 0.05 : type === 'Q4_K_M' || type === 'IQ4_XS' || variant === 'qwen3moe' ? 0.4 : 0.3;
        // Unfused: this table's greedy steps leave the logits they pick from.
        const { model, device, table, close } = await tableFor(backend, path, undefined, { fusedHead: false });
        try {
          const cpu = model.openSequence({ backend: 'native', contextSize: CONTEXT });
          for (let p = 0; p < PROMPT.length; p++) {
            table.tokens.write(4 * p, Uint32Array.of(PROMPT[p])); // the previous step's argmax wrote this slot
            await device.runChain(table.greedy, p, 1);
            const gpu = new Float32Array(table.logits.read(0, model.vocabSize * 4));
            const expected = Float32Array.from(await cpu.evaluate(Uint32Array.of(PROMPT[p]), p));
            let worst = 0;
            for (let i = 0; i < gpu.length; i++) worst = Math.max(worst, Math.abs(gpu[i] - expected[i]));
            expect(worst, `position ${p}`).toBeLessThan(tolerance);
            const written = table.tokens.readUint32(p + 1, 1)[0];
            expect(written).toBe(argmax(gpu));
            const best = argmax(expected);
            if (expected[best] - runnerUp(expected, best) > 2 * tolerance) expect(written, `position ${p}`).toBe(best);
          }
          // 8 greedy tokens after the prompt: one submission, then 8 one-token
          // ones on a fresh table, whose LM head is fused into the pick.
          table.tokens.write(4 * (PROMPT.length - 1), Uint32Array.of(PROMPT[PROMPT.length - 1]));
          await device.runChain(table.greedy, PROMPT.length - 1, 8);
          const chained = Array.from(table.tokens.readUint32(PROMPT.length, 8));
          const fresh = await tableFor(backend, path);
          try {
            fresh.table.tokens.write(0, Uint32Array.from(PROMPT));
            for (let p = 0; p < PROMPT.length - 1; p++) {
              await fresh.device.runChain(fresh.table.greedy, p, 1);
              fresh.table.tokens.write(4 * (p + 1), Uint32Array.of(PROMPT[p + 1]));
            }
            for (let p = PROMPT.length - 1; p < PROMPT.length + 7; p++) await fresh.device.runChain(fresh.table.greedy, p, 1);
            expect(Array.from(fresh.table.tokens.readUint32(PROMPT.length, 8))).toEqual(chained);
            // Speculative verification of the prompt's last token and three of
            // the chain's, in one dispatch per matrix (the batch kernels: each
            // row with the bits it gets alone): the chain's tokens.
            const verify = fresh.table.verifyTable(4, { temperature: 0 });
            try {
              await fresh.device.runChain(verify, PROMPT.length - 1, 1);
              expect(Array.from(fresh.table.readVerified(PROMPT.length - 1, 4))).toEqual(chained.slice(0, 4));
            } finally {
              verify.dispose();
            }
          } finally {
            fresh.close();
          }
          // The prompt in batches of 3, 3 and 2 (the matrix-matrix kernels, a
          // causal batch of queries) with the attention split over 3
          // threadgroups: the CPU's logits after the whole prompt, within the
          // tolerance; then the same greedy chain, unless the two GPU paths'
          // float sums (in other orders) meet a near tie.
          const batched = await tableFor(backend, path, undefined, { prefillBatch: 3, attentionSplits: 3 });
          try {
            const cpuLogits = Float32Array.from(
              await model.openSequence({ backend: 'native', contextSize: CONTEXT }).evaluate(Uint32Array.from(PROMPT), 0),
            );
            batched.table.tokens.write(0, Uint32Array.from(PROMPT));
            for (const [start, count] of [
              [0, 3],
              [3, 3],
              [6, 2],
            ]) {
              await batched.device.runChain(batched.table.batchTable(count, start === 6), start, 1);
            }
            const gpu = new Float32Array(batched.table.logits.read(0, model.vocabSize * 4));
            let worst = 0;
            for (let i = 0; i < gpu.length; i++) worst = Math.max(worst, Math.abs(gpu[i] - cpuLogits[i]));
            expect(worst, 'batched prompt').toBeLessThan(tolerance);
            await batched.device.runChain(batched.table.greedy, PROMPT.length - 1, 8);
            const tokens = Array.from(batched.table.tokens.readUint32(PROMPT.length, 8));
            const differs = tokens.findIndex((t, i) => t !== chained[i]);
            if (differs >= 0) {
              const logits = Float32Array.from(
                await model
                  .openSequence({ backend: 'native', contextSize: CONTEXT })
                  .evaluate(Uint32Array.from([...PROMPT, ...chained.slice(0, differs)]), 0),
              );
              const best = argmax(logits);
              expect(logits[best] - runnerUp(logits, best), `first difference at ${differs}`).toBeLessThan(2 * tolerance);
            }
          } finally {
            batched.close();
          }
        } finally {
          close();
        }
      },
    );
  });

  test('a tensor type without a GPU kernel is an error naming the tensor and the types there are', async () => {
    const path = join(dir, 'llama2-Q4_0.gguf'); // written by the tests above
    await expect(tableFor(backend, path, 'Q4_0')).rejects.toThrow(BackendUnavailableError);
    await expect(tableFor(backend, path, 'Q4_0')).rejects.toThrow(
      /tensor token_embd\.weight is type 2, which has no GPU kernel \(the GPU reads F32, F16, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16\)/,
    );
  });

  test('a prefill batch is 512 tokens unless the context is shorter, and a count from 1 to 65536', async () => {
    const path = join(dir, 'prefill-batch.gguf');
    await writeRandomModel(path, variantSpec('llama2', 'Q8_0', 3));
    for (const [context, batch] of [
      [CONTEXT, CONTEXT],
      [600, 512],
    ]) {
      const { table, close } = await tableFor(backend, path, undefined, {}, context);
      try {
        expect(table.prefillBatch).toBe(batch);
      } finally {
        close();
      }
    }
    await expect(tableFor(backend, path, undefined, { prefillBatch: 0 })).rejects.toThrow(
      'Expected an integer from 1 to 65536 for prefillBatch but received 0',
    );
    await expect(tableFor(backend, path, undefined, { prefillBatch: 2.5 })).rejects.toThrow(
      'Expected an integer from 1 to 65536 for prefillBatch but received 2.5',
    );
  });

  // The mixture of experts' indexed kernels (md_matvec_id_*, md_matmul_id_*)
  // on every type the variants above leave out for qwen3moe: each step's
  // logits (one pair per chosen expert) and a prompt in batches (the pairs
  // grouped by expert), against the CPU. F16 measured 0.005 from it: the
  // kernels and the router agree; a quantized file's difference is the
  // CPU's activation rounding (Q8_0, Q8_K), which here also moves the
  // router's weights: Q4_K measured 0.32 (qwen3moe's Q4_K above, position
  // 5), so quantized types take 0.4 for qwen3moe.
  const moeTypes = [...TYPES, ...LLAMA_ONLY_TYPES].filter((t): t is TypeName => !isMix(t) && !typesFor('qwen3moe', TYPES).includes(t));
  test.each(moeTypes)('qwen3moe, %s: the indexed expert kernels, one token and a batched prompt, within the tolerance of the CPU', async (type) => {
    const path = join(dir, `qwen3moe-every-type-${type}.gguf`);
    await writeRandomModel(path, variantSpec('qwen3moe', type, 3));
    const tolerance = type === 'F32' ? 0.05 : 0.4;
    const steps = await tableFor(backend, path, undefined, { fusedHead: false });
    try {
      const cpu = steps.model.openSequence({ backend: 'native', contextSize: CONTEXT });
      for (let p = 0; p < PROMPT.length; p++) {
        steps.table.tokens.write(4 * p, Uint32Array.of(PROMPT[p]));
        await steps.device.runChain(steps.table.greedy, p, 1);
        const gpu = new Float32Array(steps.table.logits.read(0, steps.model.vocabSize * 4));
        const expected = await cpu.evaluate(Uint32Array.of(PROMPT[p]), p);
        expect(maxDifference(gpu, expected), `position ${p}`).toBeLessThan(tolerance);
      }
      const expected = await steps.model.openSequence({ backend: 'native', contextSize: CONTEXT }).evaluate(Uint32Array.from(PROMPT), 0);
      const batched = await tableFor(backend, path, undefined, { prefillBatch: 5 });
      try {
        batched.table.tokens.write(0, Uint32Array.from(PROMPT));
        await batched.device.runChain(batched.table.batchTable(5, false), 0, 1);
        await batched.device.runChain(batched.table.batchTable(3, true), 5, 1);
        const gpu = new Float32Array(batched.table.logits.read(0, steps.model.vocabSize * 4));
        expect(maxDifference(gpu, expected), 'batched prompt').toBeLessThan(tolerance);
      } finally {
        batched.close();
      }
    } finally {
      steps.close();
    }
  });

  // Q4_K_M's ffn_down_exps are Q6_K in some layers (quant-mix.ts); here the
  // gate and up differ too, which the fused SwiGLU kernel cannot take: two
  // indexed dispatches and the SwiGLU kernel, then Q6_K's down.
  test('qwen3moe, Q4_K_M with Q8_0 up experts: gate and up of two types, within the tolerance of the CPU', async () => {
    const path = join(dir, 'qwen3moe-mixed-experts.gguf');
    await writeRandomModel(path, { ...variantSpec('qwen3moe', 'Q4_K_M', 3), typeOverrides: { ffn_up_exps: 'Q8_0' } });
    const header = await readGgufHeader(path);
    const types = ['ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps'].map((n) => header.tensors.find((t) => t.name === `blk.1.${n}.weight`)?.type);
    expect(types).toEqual([12, 8, 14]); // Q4_K, Q8_0, Q6_K
    const { model, device, table, close } = await tableFor(backend, path, undefined, { fusedHead: false });
    try {
      const cpu = model.openSequence({ backend: 'native', contextSize: CONTEXT });
      for (let p = 0; p < PROMPT.length; p++) {
        table.tokens.write(4 * p, Uint32Array.of(PROMPT[p]));
        await device.runChain(table.greedy, p, 1);
        const gpu = new Float32Array(table.logits.read(0, model.vocabSize * 4));
        expect(maxDifference(gpu, await cpu.evaluate(Uint32Array.of(PROMPT[p]), p)), `position ${p}`).toBeLessThan(0.4);
      }
    } finally {
      close();
    }
  });

  describe('generate() on the device', () => {
    test.each(GPU_VARIANTS)(
      '%s: greedy, chained, the same tokens as the CPU (but at a near tie) and with speculation, stops and resumes',
      async (variant) => {
        const path = join(dir, `generate-${variant}.gguf`);
        await writeRandomModel(path, { ...variantSpec(variant, 'Q8_0', 5), logitScale: 1.5 });
        const model = await loadModel(path, { threads: 1 });
        try {
          const options = { temperature: 0, maxTokens: 12, contextSize: 64 } as const;
          const gpu = await generate(model, PROMPT, { ...options, backend, chunkSize: 4 });
          const cpu = await generate(model, PROMPT, { ...options, backend: 'native' });
          expect([gpu.backend, gpu.chained, gpu.path, cpu.chained]).toEqual([backend, true, 'greedy', false]);
          const first = gpu.tokens.findIndex((t, i) => t !== cpu.tokens[i]);
          if (first >= 0) {
            // Only where the CPU's top two are within the quantized tolerance twice over.
            const sequence = model.openSequence({ backend: 'native', contextSize: 64 });
            const logits = await sequence.evaluate(Uint32Array.from([...PROMPT, ...cpu.tokens.slice(0, first)]), 0);
            const best = argmax(logits);
            expect(logits[best] - runnerUp(logits, best), `first difference at ${first}`).toBeLessThan(0.6);
            sequence.dispose();
          }
          // Speculative, verified on the GPU (drafts from the model itself on the CPU): the chain's tokens.
          const speculative = await generate(model, PROMPT, { ...options, backend, speculative: { draft: model, draftTokens: 9 } });
          expect(speculative.tokens).toEqual(gpu.tokens);
          expect(speculative.stats.speculative!.accepted).toBeGreaterThan(0);
          // A Session on the GPU: a stop trigger rewinds, and the next call continues from there.
          using session = new Session(model, { backend, contextSize: 64 });
          const a = await session.generate(PROMPT, { temperature: 0, maxTokens: 5, chunkSize: 2 });
          const b = await session.generate([], { temperature: 0, maxTokens: 7, chunkSize: 3 });
          expect([...a.tokens, ...b.tokens]).toEqual(gpu.tokens);
        } finally {
          model.dispose();
        }
      },
    );

    // The chain writes its last token without evaluating it: the next call
    // must evaluate it (a bug once left its KV entries empty on the GPU).
    test.each([
      ['greedy', { temperature: 0 }],
      ['sampled', { temperature: 0.9, seed: 4 }],
    ] as const)('a Session continues after a chained call as a fresh one does (%s)', async (_, sampling) => {
      const path = join(dir, 'resume.gguf');
      await writeRandomModel(path, { ...variantSpec('qwen3', 'Q8_0', 4), logitScale: 1.5 });
      const model = await loadModel(path, { threads: 1 });
      try {
        using session = new Session(model, { backend, contextSize: 64 });
        const first = await session.generate(PROMPT, { ...sampling, maxTokens: 3 });
        expect(first.chained).toBe(true);
        const next = await session.generate([2, 3], { ...sampling, maxTokens: 5 });
        using fresh = new Session(model, { backend, contextSize: 64 });
        const same = await fresh.generate([...PROMPT, ...first.tokens, 2, 3], { ...sampling, maxTokens: 5 });
        expect(next.tokens).toEqual(same.tokens);
      } finally {
        model.dispose();
      }
    });

    test("sampled step by step (a tokenMask that allows every token), the chain's tokens: logits rounded to float16 as the chain does", async () => {
      const path = join(dir, 'stepwise.gguf');
      await writeRandomModel(path, { ...variantSpec('qwen3', 'Q8_0', 6), logitScale: 1.5 });
      const model = await loadModel(path, { threads: 1 });
      try {
        const options = { temperature: 0.9, topK: 20, seed: 11, maxTokens: 10, contextSize: 64, backend } as const;
        const chained = await generate(model, PROMPT, options);
        const everything = new Uint32Array(Math.ceil(model.vocabSize / 32)).fill(0xffffffff);
        const stepwise = await generate(model, PROMPT, { ...options, tokenMask: () => everything });
        expect([chained.chained, stepwise.path]).toEqual([true, 'constrained']);
        expect(stepwise.tokens).toEqual(chained.tokens);
      } finally {
        model.dispose();
      }
    });

    test("a sampled token follows the exact filtered distribution of the GPU's logits (chi-square, fixed seeds)", async () => {
      const path = join(dir, 'sampled.gguf');
      await writeRandomModel(path, { ...variantSpec('qwen3', 'Q4_0', 9), logitScale: 1 });
      const model = await loadModel(path, { threads: 1 });
      const sequence = model.openSequence({ backend, contextSize: 16 });
      try {
        const filters = { temperature: 1, topK: 8, topP: 1, minP: 0 };
        const start = PROMPT.length - 1;
        await sequence.chain!.prefill(Uint32Array.from(PROMPT.slice(0, start)), 0);
        const z = Array.from(await sequence.evaluate(Uint32Array.of(PROMPT[start]), start), (x) => numberFromFloat16(float16FromNumber(x)));
        const p = exactDistribution(z, filters);
        const counts = new Array<number>(z.length).fill(0);
        for (let seed = 0; seed < 800; seed++) {
          for await (const chunk of sequence.chain!.run({ ...filters, seed }, start, 1, 1)) counts[chunk.tokens[0]]++;
        }
        p.forEach((pi, t) => {
          if (pi === 0) expect(counts[t], `token ${t} is filtered out`).toBe(0);
        });
        expect(chiSquarePValue(counts, p).p).toBeGreaterThan(0.001);
      } finally {
        sequence.dispose();
        model.dispose();
      }
    });
  });
});
