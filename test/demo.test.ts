// demo.test.ts: `npm run demo`'s GGUF part with a real model: the built
// demo (dist/demo, which `npm test` builds first) tells stories260K's story
// on the CPU, the text llama.cpp continues "Once upon a time" with, and
// says why the emulated GPU tables do not run it; a bad path is an error.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { sharedModel } from './gguf/shared-model.js';
import { ROOT } from './helpers.js';

const demo = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [join(ROOT, 'dist/demo/gguf-demo.js'), ...args], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000,
  });

describe('npm run demo -- --model FILE', () => {
  it('tells the real model\'s story on the CPU and says why the GPU tables do not run it', () => {
    const path = sharedModel('stories260K.gguf');
    const run = demo(['--model', path]);
    expect(run.status, run.stderr).toBe(0);
    process.stdout.write(run.stdout);  // CI's log shows the story
    expect(run.stdout).toContain(`loaded ${path}: llama, 5 layers, embedding 64, 48 F32 tensors`);
    expect(run.stdout).toContain('CPU (greedy): Once upon a time, there was a little girl named Lily. She loved to play outside in the park.');
    expect(run.stdout).toMatch(/\[120 tokens, stopped by maxTokens, \d+ tokens\/s\]/);
    expect(run.stdout).toContain('emulated GPU: not run. The emulated backend is not available: the GPU forward pass needs ffnLength to be a multiple of 32');
    expect(run.stdout).not.toContain('random weights');
  });

  it('a model that cannot be read is an error naming the file, from --model or METAL_DECODE_DEMO_MODEL', () => {
    for (const run of [demo(['--model', '/nonexistent/model.gguf']), demo([], { METAL_DECODE_DEMO_MODEL: '/nonexistent/model.gguf' })]) {
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain('/nonexistent/model.gguf: file: cannot be read (ENOENT)');
    }
  });
});
