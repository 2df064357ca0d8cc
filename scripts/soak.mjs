#!/usr/bin/env node
// soak.mjs: memory over a long run. For each backend, N generations on
// fresh Sessions (each disposed); then M cycles of opening an emulated
// device, running a chain and disposing it. RSS and V8's external memory
// are sampled after a warm-up and at the end; a leak shows as growth that
// scales with N or M, not as the one-off growth of the first rounds.
//
//   npm run build && node --expose-gc scripts/soak.mjs           # 10,000 generations, 1,000 cycles
//   node scripts/soak.mjs --generations 2000 --cycles 200 --backend native
//
// docs/reliability.md records a run.
import { parseArgs } from 'node:util';

import { BigramModel, DispatchTableBuilder, getBackends, openDevice, Session } from '../dist/lib/index.js';

const { values } = parseArgs({
  options: {
    generations: { type: 'string', default: '10000' },
    cycles: { type: 'string', default: '1000' },
    backend: { type: 'string', multiple: true },
  },
});
const generations = Number(values.generations);
const cycles = Number(values.cycles);
const available = getBackends()
  .filter((b) => b.available)
  .map((b) => b.name);
const backends = values.backend ?? available.filter((b) => b !== 'metal' || available.includes('metal'));

const mb = (bytes) => (bytes / 2 ** 20).toFixed(1);
const memory = () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, external: m.external };
};

// Runs `step` n times after a warm-up of n / 10, sampling memory at each
// quarter: a leak grows quarter after quarter; warm-up growth does not.
async function measure(name, n, step) {
  const warmup = Math.max(1, Math.floor(n / 10));
  for (let i = 0; i < warmup; i++) await step(i);
  const samples = [memory()];
  const started = performance.now();
  const rest = n - warmup;
  for (let q = 1; q <= 4; q++) {
    for (let i = Math.floor(((q - 1) * rest) / 4); i < Math.floor((q * rest) / 4); i++) await step(warmup + i);
    samples.push(memory());
  }
  const ms = performance.now() - started;
  console.log(
    `${name.padEnd(30)} rss MB ${samples.map((m) => mb(m.rss)).join(' -> ')}; external MB ${samples.map((m) => mb(m.external)).join(' -> ')}; ` +
      `${(rest / (ms / 1000)).toFixed(0)}/s`,
  );
}

const model = BigramModel.fromSeed({ vocabSize: 4096, dim: 64, seed: 11 });
console.log(`soak: node ${process.version}, ${generations} generations per backend, ${cycles} device cycles`);
for (const backend of backends) {
  // The emulator runs every kernel on CPU fibers: a tenth of the generations.
  const n = backend === 'emulated' ? Math.ceil(generations / 10) : generations;
  await measure(`${backend}: ${n} generations`, n, async (i) => {
    const session = new Session(model, { backend, contextSize: 64 });
    await session.generate([1, 2, 3], { maxTokens: 8, temperature: i % 2 ? 0.8 : 0, seed: i });
    session.dispose();
  });
}

if (available.includes('emulated') && cycles > 0) {
  await measure(`emulated: ${cycles} device cycles`, cycles, async () => {
    const device = openDevice('emulated');
    const out = device.createBuffer(4096);
    const table = new DispatchTableBuilder(device)
      .add('md_noise_cells', {
        buffers: [{ index: 1, buffer: out }],
        params: { index: 0, bytes: new Uint32Array([0, 1024]) },
        threadgroups: 1,
        threadsPerThreadgroup: 1024,
      })
      .build();
    await device.runChain(table, 0, 1);
    device.dispose();
  });
}
