// gguf-demo.ts: the second half of `npm run demo`. No model weights can be
// downloaded here, so it writes a random-weight GGUF file of a small
// Llama-shaped model (the test suite's writer), loads it with loadModel as
// it would load a real one, and generates: greedy, then sampled, streamed,
// with the speed of each. The text is noise (the weights are random);
// the point is the path: file -> mapped weights -> C++ forward pass on the
// CPU -> sampler -> tokens.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { generate, loadModel, type GenerationResult } from '../lib/index.js';
import { SHAPES } from '../test/gguf/make-model.js';
import { writeRandomModel } from '../test/gguf/random-model.js';

const dir = mkdtempSync(join(tmpdir(), 'metal-decode-demo-'));
try {
  const path = join(dir, 'random-llama-q4_0.gguf');
  const shape = SHAPES.small;
  await writeRandomModel(path, { ...shape, type: 'Q4_0', seed: 7 });
  console.log(`\nwrote ${path}: a random-weight llama model (d ${shape.shape.d}, ${shape.shape.layers} layers, vocabulary ${shape.shape.vocab}, Q4_0)`);

  let shown = -1;
  const model = await loadModel(path, {
    onLoadProgress: (p) => {
      const percent = Math.floor(p * 100);
      if (percent !== shown) process.stdout.write(`\rloading: ${(shown = percent)}%`);
    },
  });
  const { info } = model;
  console.log(`\rloaded ${info.architecture}: ${info.config.blockCount} layers, ${info.config.headCount} heads (${info.config.headCountKv} KV), ` +
    `${Object.entries(info.tensorTypes).map(([t, n]) => `${n} ${t}`).join(' + ')} tensors; ` +
    `forward pass on the CPU, ${info.cpuKernels} kernels, ${info.threads} threads`);

  const prompt = [1, 200, 300, 400, 500, 600, 700, 800];  // token ids: text prompts need the model's tokenizer (coming next)
  const show = (r: GenerationResult) =>
    `[${r.stats.generatedTokens} tokens on ${r.backend}, prefill ${r.stats.promptTokens} tokens in ${r.stats.prefillMs.toFixed(1)} ms, ` +
    `decode ${r.stats.decodeTokensPerSecond.toFixed(0)} tokens/s]`;
  const greedy = await generate(model, prompt, { temperature: 0, maxTokens: 48 });
  console.log(`greedy:  ${JSON.stringify(greedy.text.slice(0, 120))}\n         ${show(greedy)}`);
  process.stdout.write('sampled: ');
  const sampled = generate(model, prompt, { temperature: 0.8, topP: 0.95, seed: 42, maxTokens: 48 });
  for await (const { token } of sampled) process.stdout.write(`${token} `);
  console.log(`\n         ${show(await sampled)}`);
  model.dispose();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
