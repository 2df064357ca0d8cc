// demo.test.ts: `npm run demo`'s GGUF part with a real model: the built
// demo (dist/demo, which `npm test` builds first) tells stories260K's story
// on the CPU, the text llama.cpp continues "Once upon a time" with, then
// the same tokens on the emulated GPU tables; a bad path is an error.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { sharedModel } from './gguf/shared-model.js';
import { ROOT } from './helpers.js';

const demo = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [join(ROOT, 'dist/demo/gguf-demo.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 240_000,
  });

describe('npm run demo -- --model FILE', () => {
  it("tells the real model's story on the CPU and on the emulated GPU, the same tokens", () => {
    const path = sharedModel('stories260K.gguf');
    const run = demo(['--model', path]);
    expect(run.status, run.stderr).toBe(0);
    process.stdout.write(run.stdout); // CI's log shows the story
    expect(run.stdout).toContain(`loaded ${path}: llama, 5 layers, embedding 64, 48 F32 tensors`);
    expect(run.stdout).toContain('CPU (greedy): Once upon a time, there was a little girl named Lily. She loved to play outside in the park.');
    expect(run.stdout).toMatch(/\[120 tokens, stopped by maxTokens, \d+ tokens\/s\]/);
    const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park.';
    expect(run.stdout).toContain(`emulated GPU (greedy): ${story}`);
    expect(run.stdout).toContain('[120 tokens, chained, the same tokens as the CPU]');
    // The whole story, the same text on both.
    const cpuText = run.stdout.split('CPU (greedy): ')[1].split('\n[')[0];
    const gpuText = run.stdout.split('emulated GPU (greedy): ')[1].split('\n[')[0];
    expect(gpuText).toBe(cpuText);
    expect(run.stdout).not.toContain('random weights');
  });

  it('a model that cannot be read is an error naming the file, from --model or METAL_DECODE_DEMO_MODEL', () => {
    for (const run of [demo(['--model', '/nonexistent/model.gguf']), demo([], { METAL_DECODE_DEMO_MODEL: '/nonexistent/model.gguf' })]) {
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain('/nonexistent/model.gguf: file: cannot be read (ENOENT)');
    }
  });
});
