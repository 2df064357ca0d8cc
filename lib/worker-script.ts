// worker-script.ts: where a worker thread's compiled script is. Beside the
// module that starts it in the package; from the build when that module
// runs from source (the tests run lib/ as TypeScript).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** `relative`: the script's path from lib/, compiled (e.g. 'tokenizers/encoder-worker.js'). */
export function workerScript(relative: string): URL {
  const beside = new URL(`./${relative}`, import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside;
  const built = new URL(`../dist/lib/${relative}`, import.meta.url);
  if (existsSync(fileURLToPath(built))) return built;
  throw new Error(`A worker script is missing (${fileURLToPath(beside)}); run npm run build`);
}
