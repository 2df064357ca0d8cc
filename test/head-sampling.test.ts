// head-sampling.test.ts: FlashSampling in a GGUF model's chain tables
// (lib/models/head-sampling.ts) against the unfused tables, on the
// emulated device: for every architecture variant (tied and untied LM
// heads) x every weight type, greedy, greedy with a bias and
// temperature-only sampling with and without a bias give the same tokens
// with the LM head fused into the pick as with the LM head, then the
// argmax or the sampling kernels. The fused tables are checked to be
// fused (their labels), and options with a filter or a penalty to keep
// the sampling kernels.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { loadModel, openDevice } from '../lib/index.js';
import { readGgufHeader } from '../lib/gguf/read-header.js';
import type { ChainSamplingOptions } from '../lib/gpu/sampling-command.js';
import { GgufForwardTable } from '../lib/models/gguf-forward-table.js';
import { GpuWeights } from '../lib/models/gpu-weights.js';
import { loadAddon } from '../lib/native/load-addon.js';
import type { TypeName } from './gguf/dequantize.js';
import { writeRandomModel } from './gguf/random-model.js';
import { GPU_VARIANTS, newerArchitectureTypes, variantSpec } from './gguf/variants.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-head-sampling-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TYPES: TypeName[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q4_K', 'Q5_K', 'Q6_K'];
const PROMPT = [1, 17, 42, 99, 7];
const CONTEXT = 32;
const TOKENS = 6;
const OFF = { topK: 0, topP: 1, minP: 0, repeatPenalty: false } as const;
const OPTION_SETS: [string, ChainSamplingOptions | undefined][] = [
  ['greedy', undefined],
  ['greedy with a bias', { logitBias: { 5: 2, 17: -Infinity, 42: 0.5 } }],
  ['temperature only', { temperature: 0.9, seed: 11, ...OFF }],
  ['hot temperature', { temperature: 2.5, seed: 12, ...OFF }],
  ['temperature and a bias', { temperature: 1, seed: 13, logitBias: { 5: 2, 17: -Infinity }, ...OFF }],
];

async function tables(backend: (typeof GPU_BACKENDS)[number], path: string) {
  const model = await loadModel(path, { threads: 1 });
  const header = await readGgufHeader(path);
  const device = openDevice(backend);
  const addon = loadAddon();
  if (!addon.ok) throw new Error(addon.reason);
  const weights = new GpuWeights(device, { path, tensors: header.tensors, types: addon.addon.tensorTypes });
  const fused = new GgufForwardTable(device, model.info.config, weights, CONTEXT);
  const unfused = new GgufForwardTable(device, model.info.config, weights, CONTEXT, { fusedHead: false });
  return { device, fused, unfused, close: () => (fused.dispose(), unfused.dispose(), weights.dispose(), device.dispose(), model.dispose()) };
}

// The prompt through one prefill table, then TOKENS chained steps with `options`' table.
async function chain(table: GgufForwardTable, options: ChainSamplingOptions | undefined): Promise<{ tokens: number[]; labels: string[] }> {
  table.writeTokens(0, Uint32Array.from(PROMPT));
  await table.device.runChain(table.batchTable(PROMPT.length - 1, false), 0, 1);
  const step = table.tableFor(options);
  try {
    await table.device.runChain(step, PROMPT.length - 1, TOKENS);
    return { tokens: Array.from(table.tokens.readUint32(PROMPT.length, TOKENS)), labels: step.labels };
  } finally {
    if (step !== table.greedy) step.dispose();
  }
}

// Every test below on each GPU backend of the suite (helpers.ts).
describe.each(GPU_BACKENDS)('on %s', (backend) => {
  describe.each(GPU_VARIANTS)('%s', (variant) => {
    test.each(newerArchitectureTypes(variant, TYPES))("%s: the fused LM head picks the unfused tables' tokens", async (type) => {
      const path = join(dir, `${variant}-${type}.gguf`);
      await writeRandomModel(path, variantSpec(variant, type, 5));
      const { fused, unfused, close } = await tables(backend, path);
      try {
        for (const [name, options] of OPTION_SETS) {
          const expected = await chain(unfused, options);
          const got = await chain(fused, options);
          expect(got.tokens, name).toEqual(expected.tokens);
          expect(
            got.labels.filter((l) => l.startsWith('LM head + pick')),
            name,
          ).toEqual(['LM head + pick: tiles', 'LM head + pick: pick']);
          expect(
            expected.labels.some((l) => l.startsWith('LM head + pick')),
            name,
          ).toBe(false);
        }
      } finally {
        close();
      }
    });
  });

  test('options with a filter or a penalty keep the sampling kernels; the fused tables leave out the LM head and the sampler', async () => {
    const path = join(dir, 'llama2-Q4_0.gguf'); // written by the tests above
    const { fused, close } = await tables(backend, path);
    try {
      for (const options of [
        { temperature: 0.9, seed: 1 },
        { temperature: 0.9, seed: 1, ...OFF, topK: 5 },
        { temperature: 0.9, seed: 1, ...OFF, minP: 0.1 },
        { temperature: 0, logitBias: { 3: 1 }, repeatPenalty: { penalty: 1.2 } },
      ] as ChainSamplingOptions[]) {
        const table = fused.tableFor(options);
        try {
          expect(
            table.labels.some((l) => l.startsWith('LM head + pick')),
            JSON.stringify(options),
          ).toBe(false);
          expect(table.labels).toContain('LM head');
        } finally {
          table.dispose();
        }
      }
      const sampled = fused.tableFor({ temperature: 0.9, seed: 1, ...OFF });
      try {
        expect(sampled.labels).not.toContain('LM head');
        expect(sampled.labels.some((l) => l.startsWith('sample'))).toBe(false);
        expect(sampled.labels).not.toContain('logits to float16');
        expect(fused.greedy.labels.some((l) => l.startsWith('argmax'))).toBe(false);
      } finally {
        sampled.dispose();
      }
    } finally {
      close();
    }
  });
});
