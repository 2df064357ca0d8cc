// llama-cpp-model-child.ts: the child process of `bench model`'s
// llama.cpp run. argv[2]: { settings, vocab } as JSON; stdout: the
// EngineResult as JSON; an error: its message on stderr, exit code 1.
import { benchLlamaCpp } from './llama-cpp-model-run.js';
import type { ModelBenchSettings } from './model-bench.js';

try {
  const { settings, vocab } = JSON.parse(process.argv[2]) as { settings: ModelBenchSettings; vocab: number };
  process.stdout.write(JSON.stringify(await benchLlamaCpp(settings, vocab)));
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
