// resident-vocabulary.mjs: the resident memory a GGUF file's vocabulary
// alone adds to the process (loadModel's vocabOnly: the token texts and
// merges on this thread, the encoder built on its worker thread), the
// part of `bench model`'s resident memory that is neither the weights nor
// the KV cache.
//   npm run build && node scripts/resident-vocabulary.mjs FILE.gguf
import { loadModel } from '../dist/lib/index.js';

const [path] = process.argv.slice(2);
if (path === undefined) {
  console.error('Usage: node scripts/resident-vocabulary.mjs FILE.gguf');
  process.exit(2);
}
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const before = process.memoryUsage().rss;
const model = await loadModel(path, { vocabOnly: true });
const loaded = process.memoryUsage().rss - before;
model.dispose();
// The encoder's thread ends with the model; give it a moment to hand its heap back.
await new Promise((resolve) => setTimeout(resolve, 500));
const after = process.memoryUsage().rss - before;
console.log(`${path}: the vocabulary (${model.vocabSize} tokens) added ${mib(loaded)}; ${mib(after)} after dispose()`);
