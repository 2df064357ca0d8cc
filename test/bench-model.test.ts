// `metal-decode bench model`: its argument errors, and a short run on a
// small random-weight model against llama.cpp, in tables and as JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ModelBenchResult } from '../lib/bench/model-bench.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt, runCli } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-bench-model-'));
const model = join(dir, 'tiny.gguf');
beforeAll(() => writeRandomModel(model, variantSpec('llama2', 'Q4_0', 1)));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('arguments', () => {
  it.each([
    [['bench', 'model'], 'Expected a .gguf file for --model but received nothing'],
    [['bench', 'model', '--model', '/no/such.gguf'], 'Expected a .gguf file for --model but received "/no/such.gguf" (no such file)'],
    [['bench', 'model', '--model', 'package.json', '--threads', '0'], 'Expected an integer from 1 to 256 for --threads but received "0"'],
    [['bench', 'model', '--model', 'package.json', '--tokens', '1'], 'Expected an integer from 2 to 65536 for --tokens but received "1"'],
    [['bench', 'model', '--model', 'package.json', '--compare', 'vllm'], 'Expected llama.cpp, none or auto for --compare but received "vllm"'],
    [['bench', 'model', '--model', 'package.json', '--backend', 'cuda'], 'Expected native, metal or emulated for --backend but received "cuda"'],
    [
      ['bench', 'model', '--model', 'package.json', '--backend', 'emulated', '--fused-head'],
      "bench model --fused-head compares the CPU's LM head with and without the pick fused in (--backend native); the emulated tables always fuse it, and bench predict models what that saves",
    ],
  ])('%j', async (argv, message) => {
    const { code, stderr } = await runCli(...argv);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });

  it('a file that is not a model is exit code 1 with the GgufError', async () => {
    const { code, stderr } = await runCli('bench', 'model', '--model', 'package.json', '--compare', 'none');
    expect(code).toBe(1);
    expect(stderr).toContain('package.json: header: not a GGUF file');
  });
});

it('measures both engines on the same file and prints the ratios and memory', async () => {
  const { code, stdout } = await runCli('bench', 'model', '--model', model, '--threads', '1', '--prompt', '16', '--tokens', '8', '--runs', '1');
  expect(code).toBe(0);
  expect(stdout).toMatch(/^metal-decode \(native\) +\d+\.\d +\d+\.\d\d +\d+ +\w+ kernels, 1 threads$/m);
  expect(stdout).toMatch(/^llama\.cpp +\d+\.\d +\d+\.\d\d +\d+ +node-llama-cpp \d+\.\d+\.\d+/m);
  expect(stdout).toMatch(/^ratio +\d+\.\d\dx +\d+\.\d\dx +\d+\.\d\dx/m);
  expect(stdout).toContain('load time and resident memory each engine added');
  expect(stdout).toMatch(/^metal-decode \(native\) +\d+ +\d+ MiB +\d+ MiB \+ \d+ MiB +\d+\.\d\dx +\d+ MiB of weights repacked at load$/m);
  expect(stdout).toMatch(/^llama\.cpp +\d+ +\d+ MiB +\d+ MiB \+ \d+ MiB +\d+\.\d\dx *$/m);
});

it('--json gives the result with every number; --compare none leaves llama.cpp out', async () => {
  const { code, stdout } = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '4',
    '--runs',
    '1',
    '--compare',
    'none',
    '--json',
  );
  expect(code).toBe(0);
  const result = JSON.parse(stdout) as ModelBenchResult;
  expect(result.engines.map((e) => e.engine)).toEqual(['metal-decode (native)']);
  expect(result.ratios).toBeNull();
  expect(result.speculation).toBeNull();
  expect(result.engines[0].prefillTokensPerSecond).toBeGreaterThan(0);
  expect(result.engines[0].decodeTokensPerSecond).toBeGreaterThan(0);
  expect(result.engines[0].residentBytes).toBe(result.residentBytes);
  expect(result.engines[0].loadMs).toBeGreaterThan(0);
  // The tiny Q4_0 file's matrices, repacked for the tiles: a part of the file, never more.
  expect(result.repackedBytes).toBeGreaterThan(0);
  expect(result.repackedBytes).toBeLessThan(result.fileBytes);
  expect(result.fileBytes).toBeGreaterThan(0);
  expect(result.kvCacheBytes).toBe(2 * 2 * (8 + 4 + 8) * 2 * 32 * 2); // K and V, F16, positions x layers x KV heads x head dim
});

it('--backend emulated measures the dispatch tables (batched prefill, chained decode) and says the speed is not one', async () => {
  const { code, stdout } = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--backend',
    'emulated',
    '--prompt',
    '8',
    '--tokens',
    '4',
    '--runs',
    '1',
    '--compare',
    'none',
    '--json',
  );
  expect(code).toBe(0);
  const result = JSON.parse(stdout) as ModelBenchResult;
  expect(result.settings.backend).toBe('emulated');
  expect(result.engines.map((e) => [e.engine, e.note])).toEqual([
    ['metal-decode (emulated)', 'emulated dispatch tables, chained decode (CPU fibers: a check, not a speed)'],
  ]);
  expect(result.engines[0].decodeTokensPerSecond).toBeGreaterThan(0);
  expect(result.kvCacheBytes).toBe(2 * 2 * (8 + 4 + 8) * 2 * 32 * 2); // the device's F16 caches: the CPU's size
});

it('--speculative adds the decode with n-gram speculation: its speed-up, acceptance and passes, and the same tokens', async () => {
  const { code, stdout } = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '24',
    '--runs',
    '1',
    '--compare',
    'none',
    '--speculative',
    '--json',
  );
  expect(code).toBe(0);
  const result = JSON.parse(stdout) as ModelBenchResult;
  expect(result.settings.speculative).toBe(true);
  expect(result.speculation!.map((s) => s.task)).toEqual(['varied', 'summarise']);
  expect(result.speculation![0].promptTokens).toBe(8);
  expect(result.speculation![1].promptTokens).toBeGreaterThan(100); // the passage, in the file's vocabulary
  for (const s of result.speculation!) {
    expect(s.sameTokens).toBe(true);
    expect(s.decodeTokensPerSecond).toBeGreaterThan(0);
    expect(s.speedup).toBeCloseTo(s.decodeTokensPerSecond / s.plainTokensPerSecond, 6);
    expect(s.acceptanceRate).toBeGreaterThanOrEqual(0);
    expect(s.acceptanceRate).toBeLessThanOrEqual(1);
    expect(s.forwardPassesPerToken).toBeGreaterThan(0);
  }
  const tables = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '8',
    '--runs',
    '1',
    '--compare',
    'none',
    '--speculative',
  );
  expect(tables.stdout).toMatch(/^metal-decode \(native\) \+ n-gram speculation, varied prompt .* forward passes per token; the same tokens$/m);
  expect(tables.stdout).toMatch(/^metal-decode \(native\) \+ n-gram speculation, summarise task \(\d+ prompt tokens\) .* the same tokens$/m);
});

it('--constrained adds the decode under a JSON schema: its speed against unconstrained and the mask time per token', async () => {
  const { code, stdout } = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '16',
    '--runs',
    '1',
    '--compare',
    'none',
    '--constrained',
    '--json',
  );
  expect(code).toBe(0);
  const result = JSON.parse(stdout) as ModelBenchResult;
  const c = result.constrained!;
  expect(result.settings.constrained).toBe(true);
  expect(c.vocabSize).toBe(300);
  expect(c.ratio).toBeCloseTo(c.constrainedTokensPerSecond / c.plainTokensPerSecond, 6);
  expect(c.maskMsPerToken).toBeGreaterThan(0);
  expect(c.constrainedTokens).toBeGreaterThan(1);
  const tables = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '8',
    '--runs',
    '1',
    '--compare',
    'none',
    '--constrained',
  );
  expect(tables.stdout).toMatch(
    /^metal-decode \(native\) under a JSON schema .* \d+% of the decode without \([\d.]+\); masks [\d.]+ ms per token at V 300; \d+ tokens under the grammar$/m,
  );
});

it('--fused-head adds greedy and temperature-only decodes with the logits sampled against the LM head fused with the pick, and the same tokens', async () => {
  const { code, stdout } = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '12',
    '--runs',
    '1',
    '--compare',
    'none',
    '--fused-head',
    '--json',
  );
  expect(code).toBe(0);
  const result = JSON.parse(stdout) as ModelBenchResult;
  expect(result.settings.fusedHead).toBe(true);
  expect(result.fusedHead!.map((h) => h.config)).toEqual(['greedy', 'temperature only']);
  for (const h of result.fusedHead!) {
    expect(h.sameTokens).toBe(true);
    expect(h.speedup).toBeCloseTo(h.fusedTokensPerSecond / h.unfusedTokensPerSecond, 6);
  }
  const tables = await runCli(
    'bench',
    'model',
    '--model',
    model,
    '--threads',
    '1',
    '--prompt',
    '8',
    '--tokens',
    '8',
    '--runs',
    '1',
    '--compare',
    'none',
    '--fused-head',
  );
  expect(tables.stdout).toMatch(
    /^metal-decode \(native\), temperature only, LM head fused with the pick .* [\d.]+x the decode with the logits sampled \([\d.]+\); the same tokens$/m,
  );
});
