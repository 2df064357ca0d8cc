// RequestWorker's endWhenIdle: a thread that keeps no state between
// requests ends after its last answer (the GGUF header's thread, whose
// parse leaves a large vocabulary's garbage in its heap), and the next
// request starts another.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import type { PackedHeader } from '../lib/gguf/read-header.js';
import { RequestWorker } from '../lib/request-worker.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';

const dir = mkdtempSync(join(tmpdir(), 'md-request-worker-'));
const model = join(dir, 'tiny.gguf');
beforeAll(() => writeRandomModel(model, variantSpec('llama2', 'Q4_0', 1)));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('endWhenIdle ends the thread after the last answer, and the next request starts another', async () => {
  const idle = new RequestWorker('gguf/header-worker.js', undefined, undefined, undefined, true);
  const kept = new RequestWorker('gguf/header-worker.js', undefined);
  try {
    expect(idle.threadRunning).toBe(false);
    const both = Promise.all([idle.request<PackedHeader>({ path: model }), idle.request<PackedHeader>({ path: model })]);
    expect(idle.threadRunning).toBe(true);
    const [first, second] = await both;
    expect(first.header.tensors.length).toBeGreaterThan(0);
    expect(second.header.tensors.length).toBe(first.header.tensors.length);
    expect(idle.threadRunning).toBe(false);
    const again = await idle.request<PackedHeader>({ path: model });
    expect(again.header.tensors.length).toBe(first.header.tensors.length);
    expect(idle.threadRunning).toBe(false);

    await kept.request<PackedHeader>({ path: model });
    expect(kept.threadRunning).toBe(true);
  } finally {
    idle.dispose();
    kept.dispose();
  }
});
