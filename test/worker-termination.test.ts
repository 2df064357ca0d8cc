// worker-termination.test.ts: a worker thread terminated while it uses the
// addon, at many points of a long run, ends the worker and nothing else.
// Terminating a worker that was in a generate() on emulated used to abort
// the whole process in about 2 of 5 runs ("terminate called after throwing
// an instance of 'Napi::Error'": a method's error could not be thrown into
// the ending environment, and node-addon-api turned that into a C++
// exception nothing caught). The run is a child process, so a crash fails
// this test instead of the test runner.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, expect, test } from 'vitest';

import { sharedModel } from './gguf/shared-model.js';
import { requireNativeBuilt, ROOT } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-terminate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The worker loops over one kind of work until it is terminated.
const WORKER = `
import { parentPort, workerData } from 'node:worker_threads';
import { BigramChain, BigramModel, generate, loadModel, openDevice, sampleAsync, toFloat16Array } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/lib/index.js')).href)};
const { kind, path } = workerData;
const model = kind === 'chain' || kind === 'sampleAsync' ? undefined : await loadModel(path, { threads: 1 });
parentPort.postMessage('ready');
const logits = toFloat16Array(Float32Array.from({ length: 32000 }, (_, i) => Math.sin(i)));
const bigram = BigramModel.fromSeed({ vocabSize: 4096, dim: 64, seed: 1 });
for (let seed = 0; ; seed++) {
  if (kind === 'generate-emulated') await generate(model, 'Once upon a time', { backend: 'emulated', maxTokens: 64, temperature: 0.8, seed });
  else if (kind === 'generate-native') await generate(model, 'Once upon a time', { backend: 'native', maxTokens: 64, temperature: 0.8, seed });
  else if (kind === 'generate-grammar') await generate(model, 'Once upon a time', { backend: 'native', maxTokens: 64, temperature: 0.8, seed, grammar: { type: 'regex', pattern: '( [a-z]+){1,20}' } });
  else if (kind === 'loadModel') (await loadModel(path, { threads: 1 })).dispose();
  else if (kind === 'sampleAsync') await sampleAsync(logits, { backend: 'emulated', temperature: 0.8, seed });
  else {
    const chain = new BigramChain(bigram, openDevice('emulated'), { contextSize: 512 });
    chain.writeTokens(0, [1, 2, 3]);
    for await (const _ of chain.run(chain.tableFor({ temperature: 0.8, seed }), 2, 256, { chunkSize: 16 }));
  }
}
`;

const MAIN = `
import { Worker } from 'node:worker_threads';
const [script, path, rounds] = process.argv.slice(2);
const kinds = ['generate-emulated', 'generate-native', 'generate-grammar', 'loadModel', 'sampleAsync', 'chain'];
let seed = 7;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
for (let i = 0; i < Number(rounds); i++) {
  const worker = new Worker(script, { workerData: { kind: kinds[i % kinds.length], path } });
  worker.on('error', () => {});  // a worker's own error is not what this run tests
  await new Promise((resolve) => { worker.once('message', resolve); worker.once('exit', resolve); });
  await new Promise((resolve) => setTimeout(resolve, 1 + random() * 150));
  await worker.terminate();
}
console.log('survived ' + rounds + ' terminations');
`;

test('120 terminations in the middle of generate (emulated, native, under a grammar on its own thread), loadModel, sampleAsync and a chain: the process lives', () => {
  const worker = join(dir, 'worker.mjs'),
    main = join(dir, 'main.mjs');
  writeFileSync(worker, WORKER);
  writeFileSync(main, MAIN);
  const run = spawnSync(process.execPath, [main, worker, sharedModel('stories260K.gguf'), '120'], { encoding: 'utf8', timeout: 600_000 });
  expect(run.stderr).not.toContain('terminate called');
  expect(run.signal, run.stderr).toBeNull();
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toContain('survived 120 terminations');
});
