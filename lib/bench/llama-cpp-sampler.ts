// llama-cpp-sampler.ts: the sampler scenario's llama.cpp column. llama.cpp
// samples inside its own decode loop; node-llama-cpp has no call that
// samples a row we give it, but its prebuilt binaries ship libllama with
// the C sampler API, which the addon loads and times on the same rows
// (native/bench/llama_cpp_sampler.cpp): the candidate array refilled from
// the row, then penalties, top-k, top-p, min-p, temperature and the draw,
// as llama.cpp's common sampler runs them after every decode.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { LlamaChainConfig } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';
import { resolveSampling, type SampleOptions } from '../sampling-options.js';

/** Where llama.cpp's sampler comes from, or why it cannot be compared. */
export type LlamaSamplerSource = { library: string; reason: null } | { library: null; reason: string };

// node-llama-cpp's prebuilt package of this machine's CPU (or Metal) build.
const PLATFORM_PACKAGES: Record<string, string> = {
  'darwin-arm64': 'mac-arm64-metal',
  'darwin-x64': 'mac-x64',
  'linux-x64': 'linux-x64',
  'linux-arm64': 'linux-arm64',
};

const LIBRARY_NAME = /^libllama(\.v[\d.]+)?\.(so|dylib)$/;

/** libllama from node-llama-cpp's prebuilt binaries for this machine, or why there is none. */
export function findLlamaSampler(): LlamaSamplerSource {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) return { library: null, reason: `node-llama-cpp has no prebuilt CPU build for ${process.platform}-${process.arch}` };
  let entry: string;
  try {
    entry = fileURLToPath(import.meta.resolve('node-llama-cpp'));
  } catch {
    return { library: null, reason: 'node-llama-cpp is not installed (npm install node-llama-cpp to compare)' };
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    if (!dir.endsWith(`${join('/', 'node_modules')}`)) continue;
    const bins = join(dir, '@node-llama-cpp', pkg, 'bins');
    if (!existsSync(bins)) continue;
    for (const build of readdirSync(bins)) {
      const file = readdirSync(join(bins, build)).find((name) => LIBRARY_NAME.test(name));
      if (file) return { library: join(bins, build, file), reason: null };
    }
  }
  return { library: null, reason: `node-llama-cpp's prebuilt package @node-llama-cpp/${pkg} with libllama is not installed` };
}

/** A sampling configuration as llama.cpp's chain of the same filters. */
export function llamaChainConfig(options: SampleOptions, seed: number): LlamaChainConfig {
  const s = resolveSampling({ ...options, seed });
  return {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    repeatPenalty: s.repeatPenalty,
    frequencyPenalty: s.frequencyPenalty,
    presencePenalty: s.presencePenalty,
    lastTokens: s.lastTokens,
    seed,
  };
}

/**
 * Times llama.cpp's chain on `rows` (float32 copies of the float16 rows
 * the other backends get, exact), `iterations` calls after `warmup`.
 * Greedy calls are checked against the rows' own argmax (first of ties,
 * as both engines pick it): a library whose API differs from the one the
 * addon declares fails here rather than timing garbage.
 */
export async function timeLlamaSampler(
  library: string,
  rows: Float32Array[],
  options: SampleOptions,
  seed: number,
  iterations: number,
  warmup: number,
): Promise<number[]> {
  const addon = loadAddon();
  if (!addon.ok) throw new Error(addon.reason);
  const vocab = rows[0].length;
  const all = new Float32Array(rows.length * vocab);
  rows.forEach((row, i) => all.set(row, i * vocab));
  const config = llamaChainConfig(options, seed);
  const history = new Int32Array(options.history ?? []);
  const { microseconds, tokens } = await addon.addon.timeLlamaCppSampler(library, all, vocab, config, history, iterations, warmup);
  if (config.temperature === 0) {
    tokens.forEach((token, i) => {
      const row = rows[(warmup + i) % rows.length];
      let best = 0;
      for (let t = 1; t < vocab; t++) if (row[t] > row[best]) best = t;
      if (token !== best)
        throw new Error(
          `llama.cpp's greedy sampler in ${library} picked token ${token} where the row's argmax is ${best}: its API is not the one the addon declares`,
        );
    });
  }
  return [...microseconds];
}
