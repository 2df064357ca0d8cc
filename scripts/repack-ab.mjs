// repack-ab.mjs: a prompt's speed on the CPU with loadModel's repack and
// without, the file loaded twice in one process and the two measured
// alternately (so the machine's drift falls on both alike): the median of
// the runs after a warm-up of each.
//   npm run build && node scripts/repack-ab.mjs FILE.gguf [prompt tokens, default 128] [runs, default 7]
import { loadModel } from '../dist/lib/index.js';

const [path, promptArg = '128', runsArg = '7'] = process.argv.slice(2);
if (path === undefined) {
  console.error('Usage: node scripts/repack-ab.mjs FILE.gguf [prompt tokens] [runs]');
  process.exit(2);
}
const promptTokens = Number(promptArg),
  runs = Number(runsArg);
const repacked = await loadModel(path, { threads: 2 });
const inPlace = await loadModel(path, { threads: 2, repack: false });
const prompt = Uint32Array.from({ length: promptTokens }, (_, i) => (i * 37 + 5) % repacked.vocabSize);
async function prefillMs(model) {
  const sequence = model.openSequence({ backend: 'native', contextSize: promptTokens + 1 });
  const started = performance.now();
  await sequence.evaluate(prompt, 0);
  const ms = performance.now() - started;
  sequence.dispose();
  return ms;
}
await prefillMs(repacked);
await prefillMs(inPlace);
const a = [],
  b = [];
for (let i = 0; i < runs; i++) {
  a.push(await prefillMs(repacked));
  b.push(await prefillMs(inPlace));
}
const median = (x) => x.sort((p, q) => p - q)[x.length >> 1];
const tokensPerSecond = (ms) => ((1000 * promptTokens) / ms).toFixed(1);
console.log(`${path}: ${repacked.info.cpuKernels} kernels, ${promptTokens}-token prompt, median of ${runs}`);
console.log(`  repacked (${repacked.info.repackedBytes} bytes): ${tokensPerSecond(median(a))} tok/s`);
console.log(`  in place: ${tokensPerSecond(median(b))} tok/s`);
console.log(`  ratio: ${(median(b) / median(a)).toFixed(2)}x`);
repacked.dispose();
inPlace.dispose();
