// model-options.ts: the options `chat` and `complete` share: the model
// (a file, a URL or hf:..., downloaded first), where it runs, its context,
// and the sampling.
import type { BackendChoice } from '../sampling-options.js';
import { loadModel } from '../gguf/load-model.js';
import type { GgufModel } from '../models/gguf-model.js';
import { resolveModelFile } from '../models/resolve-model-file.js';
import { UsageError } from './bench-args.js';
import { numberOption, requiredOption, type OptionSpec } from './command-args.js';
import type { Output } from './output.js';

export const MODEL_OPTIONS: OptionSpec = {
  model: { type: 'string', short: 'm' },
  backend: { type: 'string' },
  'context-size': { type: 'string' },
  threads: { type: 'string' },
  temperature: { type: 'string' },
  'top-k': { type: 'string' },
  'top-p': { type: 'string' },
  'min-p': { type: 'string' },
  seed: { type: 'string' },
  'max-tokens': { type: 'string' },
};

export const MODEL_OPTIONS_USAGE = `  --model, -m FILE    a .gguf file, an http(s) URL or hf:user/repo/file.gguf (downloaded
                      into the models directory first, as metal-decode pull does)
  --backend NAME      auto (default), metal, native or emulated
  --context-size N    tokens of context (default: auto, the model's trained context
                      or what fits in half of the free memory)
  --threads N         CPU threads of the forward pass (default: the physical cores)
  --temperature T     0 is greedy (default 0.7)
  --top-k N, --top-p P, --min-p P, --seed N   the sampling (defaults 40, 0.95, 0.05, random)
  --max-tokens N      the most tokens a reply may take (default: until the model ends it)`;

export interface ModelOptions {
  model: GgufModel;
  backend: BackendChoice;
  contextSize: number | 'auto';
  sampling: { temperature: number; topK?: number; topP?: number; minP: number; seed?: number; maxTokens?: number };
}

const BACKENDS = ['auto', 'metal', 'native', 'emulated'] as const;

/** The model loaded (with a progress line while a download runs) and the options checked. */
export async function modelOptions(values: Record<string, string | boolean | undefined>, stderr: Output): Promise<ModelOptions> {
  const uri = requiredOption(values, 'model');
  const backend = (values.backend ?? 'auto') as BackendChoice;
  if (!BACKENDS.includes(backend as (typeof BACKENDS)[number]))
    throw new UsageError(`--backend: expected one of ${BACKENDS.join(', ')}, got ${JSON.stringify(backend)}`);
  const contextSize =
    values['context-size'] === undefined || values['context-size'] === 'auto' ? 'auto' : numberOption(values, 'context-size', 2, 1 << 24)!;
  const threads = numberOption(values, 'threads', 1, 256);
  const sampling = {
    temperature: numberOption(values, 'temperature', 0, 100, false) ?? 0.7,
    topK: numberOption(values, 'top-k', 0, 1 << 24),
    topP: numberOption(values, 'top-p', 0, 1, false),
    minP: numberOption(values, 'min-p', 0, 1, false) ?? 0.05,
    seed: numberOption(values, 'seed', 0, 2 ** 32 - 1),
    maxTokens: numberOption(values, 'max-tokens', 0, 1 << 24),
  };
  let last = -1;
  const path = await resolveModelFile(uri, {
    onProgress: ({ downloaded, total }) => {
      const percent = total ? Math.floor((downloaded / total) * 100) : -1;
      if (percent !== last && percent % 10 === 0) stderr.write(`downloading ${uri}: ${percent}%\n`);
      last = percent;
    },
  });
  const model = await loadModel(path, threads === undefined ? {} : { threads });
  return {
    model,
    backend,
    contextSize,
    sampling: Object.fromEntries(Object.entries(sampling).filter(([, v]) => v !== undefined)) as ModelOptions['sampling'],
  };
}
