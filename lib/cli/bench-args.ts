// bench-args.ts: `metal-decode bench` arguments, checked into settings.
// Every mistake is a UsageError naming the flag and what it got.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import type { BackendName } from '../backends.js';
import type { BenchSettings, ScenarioName } from '../bench/report.js';
import type { ModelBenchSettings } from '../bench/model-bench.js';
import type { TokenizerBenchSettings } from '../bench/tokenizer-bench.js';
import { APPLE_CHIPS } from '../bench/apple-chips.js';
import type { PredictSettings } from '../bench/gpu-speed-model.js';
import { BENCH_VOCABS } from '../bench/sampler-configs.js';
import { PREFILL_CHUNK } from '../models/sequence-batcher.js';
import { physicalCores } from '../gguf/physical-cores.js';
import type { ServeBenchSettings } from '../bench/serve-bench.js';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const MODEL_BENCH_USAGE = `Usage: metal-decode bench model --model FILE [options]

  model     a GGUF model: prefill and decode tokens/s and the time to the first
            token, and llama.cpp's (node-llama-cpp, when installed) on the same
            file, threads and kind of device, with the ratios and the resident memory
  --model FILE       the .gguf file (required)
  --backend NAME     native (the CPU forward pass, default), metal (the dispatch tables
                     on the Mac's GPU; llama.cpp then runs on Metal too) or emulated
                     (the same tables on CPU fibers: for checking, its speed means nothing)
  --speculative      also decode with n-gram speculation (exact: the same tokens) and show
                     its decode tokens/s, the share of drafts kept and forward passes per token
  --constrained      also decode under a JSON schema (the grammar's mask every token) and show
                     its decode tokens/s against unconstrained and the mask time per token
  --fused-head       also decode greedy and temperature-only with the logits written and
                     sampled, against the LM head fused with the pick (native only: the
                     GPU tables always fuse); the tokens must be the same
  --no-repack        load with repack: false (every weight read in place from the mapped
                     file), to compare with the CPU's repacked tiles (the default)
  --threads N        forward-pass threads for both engines (default: the physical cores)
  --prompt N         prompt tokens (default 128)
  --tokens N         generated tokens (default 64)
  --runs N           timed runs after one warm-up; medians are reported (default 3)
  --compare WHAT     llama.cpp (an error if node-llama-cpp is missing), none, or auto
                     (default: llama.cpp when installed, else a line saying why not)
  --json             print the result as JSON`;

export const TOKENIZER_BENCH_USAGE = `Usage: metal-decode bench tokenizer --model FILE [options]

  tokenizer a GGUF model's tokenizer: encoding and decoding 100 KB of varied text,
            llama.cpp's tokenizer on the same text (when node-llama-cpp is
            installed), and what a chat turn's template rendering and encoding
            add before its first token
  --model FILE       the .gguf file (required; it needs a vocabulary)
  --bytes N          text to encode (default 102400)
  --runs N           timed runs after one warm-up; medians are reported (default 10)
  --compare WHAT     llama.cpp, none or auto (as for model)
  --json             print the result as JSON`;

export const PREDICT_USAGE = `Usage: metal-decode bench predict --model FILE [--context N] [--chip NAME] [--json]

  predict   a GGUF model's one-token decode on the GPU, modelled: bytes of weights,
            KV cache and logits read per token, the dispatches, and for each Apple
            silicon chip the tokens/s its bandwidth allows and the tokens/s the
            kernels' counted loads and stores are modelled to reach, with the
            limit that binds each kernel
  --model FILE       the .gguf file (required)
  --context N        tokens in the KV cache (default 1024)
  --chip NAME        the chip of the per-kernel table (default M1; one of ${APPLE_CHIPS.map((c) => c.chip).join(', ')})
  --json             print the result as JSON (every chip's kernels)`;

export const SERVE_BENCH_USAGE = `Usage: metal-decode bench serve --model FILE [options]

  serve     N concurrent streams through metal-decode serve's HTTP API (loopback,
            server-sent events) and N sequences of one node-llama-cpp context on
            the same file: all streams' tokens/s, the time to the first token and
            between tokens (p50, p99), and tokens/s at N over tokens/s at 1
  --model FILE       the .gguf file (required)
  --streams LIST     concurrent streams, one measurement each (default 1,4,16)
  --tokens N         tokens each stream generates (default 32)
  --prompt-words N   the prompt: N words of a fixed text (default 32)
  --prefill-chunk N  loadModel's prefillChunk: a prompt's tokens between two decode passes (default 32)
  --threads N        CPU threads (default: the physical cores)
  --runs N           timed runs per N after one warm-up; medians are reported (default 3)
  --compare WHAT     llama.cpp, none or auto (as for model)
  --json             print the result as JSON`;

export const BENCH_USAGE = `Usage: metal-decode bench [sampler|decode|all] [options]
       metal-decode bench model --model FILE [options]
       metal-decode bench tokenizer --model FILE [options]
       metal-decode bench predict --model FILE [--context N] [--json]
       metal-decode bench serve --model FILE [options]

Scenarios (default: all):
  sampler   us per sample() call, median and p90, per backend x V x config,
            with each backend's speed-up over js
  decode    tokens/s of the bigram model through generate(), greedy and sampled,
            chained vs one token per submission, per backend; and n-gram
            speculation vs none on repetitive and free text

Options:
  --backend NAME     metal, emulated, native or js; repeatable (default: every available one)
  --vocab N          sampler vocabulary size; repeatable (default: ${BENCH_VOCABS.join(', ')})
  --iterations N     timed repetitions of every cell (default: sampler 200 on metal and
                     native, 20 on emulated and js; decode 5 runs)
  --shape lm|flat    sampler logit rows: language-model-like (default) or flat normals
  --tokens N         decode: tokens per run (default 64)
  --chunk N          decode: tokens per GPU submission when chained (default 16)
  --model-vocab N    decode: the bigram model's vocabulary (default 4096)
  --dim N            decode: the bigram model's dimension (default 64)
  --seed N           logits, weights and sampling noise (default 7)
  --compare WHAT     sampler: llama.cpp's sampler chain on the same rows, from node-llama-cpp's
                     prebuilt libllama: llama.cpp (an error without it), none, or auto
                     (default: when it is installed, else a line saying why not)
  --json             print the report as JSON (schema: bench/report.schema.json)
  --out FILE         also write a chart: FILE.svg, or FILE.html with the tables
  --no-progress      no progress bar (it is drawn only on a terminal anyway)
  -h, --help         this text

${MODEL_BENCH_USAGE.slice(MODEL_BENCH_USAGE.indexOf('\n\n') + 2)}

${TOKENIZER_BENCH_USAGE.slice(TOKENIZER_BENCH_USAGE.indexOf('\n\n') + 2)}

${PREDICT_USAGE.slice(PREDICT_USAGE.indexOf('\n\n') + 2)}

${SERVE_BENCH_USAGE.slice(SERVE_BENCH_USAGE.indexOf('\n\n') + 2)}`;

export interface ModelBenchArgs {
  help: boolean;
  json: boolean;
  settings: ModelBenchSettings;
}

/** The arguments after `bench model`. */
export function parseModelBenchArgs(argv: string[]): ModelBenchArgs {
  const { help, json, values, flags } = parseFileBenchArgs(
    argv,
    ['threads', 'prompt', 'tokens', 'runs', 'backend'],
    ['speculative', 'constrained', 'fused-head', 'no-repack'],
  );
  const backend = values.backend ?? 'native';
  if (backend !== 'native' && backend !== 'metal' && backend !== 'emulated') {
    throw new UsageError(`Expected native, metal or emulated for --backend but received ${JSON.stringify(backend)}`);
  }
  if (flags['fused-head'] && backend !== 'native') {
    throw new UsageError(
      `bench model --fused-head compares the CPU's LM head with and without the pick fused in (--backend native); the ${backend} tables always fuse it, and bench predict models what that saves`,
    );
  }
  return {
    help,
    json,
    settings: {
      model: help ? '' : modelFile(values.model),
      backend,
      threads: integer('threads', values.threads, physicalCores(), 256),
      promptTokens: integer('prompt', values.prompt, 128, 65536),
      generatedTokens: integer('tokens', values.tokens, 64, 65536, 2),
      runs: integer('runs', values.runs, 3, 1000),
      compare: compareOption(values.compare),
      speculative: flags.speculative,
      constrained: flags.constrained,
      fusedHead: flags['fused-head'],
      repack: !flags['no-repack'],
    },
  };
}

// The flags of `bench model` and `bench tokenizer`: --model, --compare,
// --json, --help, the string flags `names` and the boolean flags `switches`.
function parseFileBenchArgs(
  argv: string[],
  names: string[],
  switches: string[] = [],
): {
  help: boolean;
  json: boolean;
  values: Record<string, string | undefined>;
  flags: Record<string, boolean>;
} {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    model: { type: 'string' },
    compare: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const name of names) options[name] = { type: 'string' };
  for (const name of switches) options[name] = { type: 'boolean' };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: attachNegativeValues(argv), allowPositionals: false, strict: true, options }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { help, json, ...rest } = values;
  const flags = Object.fromEntries(switches.map((name) => [name, rest[name] === true]));
  for (const name of switches) delete rest[name];
  return { help: help === true, json: json === true, values: rest as Record<string, string | undefined>, flags };
}

export interface PredictArgs {
  help: boolean;
  json: boolean;
  settings: PredictSettings;
}

/** The arguments after `bench predict`. */
export function parsePredictArgs(argv: string[]): PredictArgs {
  const { help, json, values } = parseFileBenchArgs(argv, ['context', 'chip']);
  if (values.compare !== undefined) throw new UsageError('bench predict has no --compare: it measures nothing, it models');
  const chip = values.chip ?? 'M1';
  if (!APPLE_CHIPS.some((c) => c.chip === chip)) {
    throw new UsageError(`Expected one of ${APPLE_CHIPS.map((c) => `"${c.chip}"`).join(', ')} for --chip but received ${JSON.stringify(chip)}`);
  }
  return { help, json, settings: { model: help ? '' : modelFile(values.model), context: integer('context', values.context, 1024, 1 << 24), chip } };
}

export interface ServeBenchArgs {
  help: boolean;
  json: boolean;
  settings: ServeBenchSettings;
}

/** The arguments after `bench serve`. */
export function parseServeBenchArgs(argv: string[]): ServeBenchArgs {
  const { help, json, values } = parseFileBenchArgs(argv, ['streams', 'tokens', 'prompt-words', 'prefill-chunk', 'threads', 'runs']);
  const list = values.streams ?? '1,4,16';
  const streams = list.split(',').map((n) => integer('streams', n.trim(), 1, 256));
  return {
    help,
    json,
    settings: {
      model: help ? '' : modelFile(values.model),
      threads: integer('threads', values.threads, physicalCores(), 256),
      streams,
      tokens: integer('tokens', values.tokens, 32, 65536, 2),
      promptWords: integer('prompt-words', values['prompt-words'], 32, 65536),
      prefillChunk: integer('prefill-chunk', values['prefill-chunk'], PREFILL_CHUNK, 65536),
      runs: integer('runs', values.runs, 3, 1000),
      compare: compareOption(values.compare),
    },
  };
}

export interface TokenizerBenchArgs {
  help: boolean;
  json: boolean;
  settings: TokenizerBenchSettings;
}

/** The arguments after `bench tokenizer`. */
export function parseTokenizerBenchArgs(argv: string[]): TokenizerBenchArgs {
  const { help, json, values } = parseFileBenchArgs(argv, ['bytes', 'runs']);
  return {
    help,
    json,
    settings: {
      model: help ? '' : modelFile(values.model),
      textBytes: integer('bytes', values.bytes, 102400, 1 << 28),
      runs: integer('runs', values.runs, 10, 1000),
      compare: compareOption(values.compare),
    },
  };
}

function modelFile(model: string | undefined): string {
  if (model === undefined) throw new UsageError('Expected a .gguf file for --model but received nothing');
  if (!existsSync(model) || !statSync(model).isFile())
    throw new UsageError(`Expected a .gguf file for --model but received ${JSON.stringify(model)} (no such file)`);
  return model;
}

function compareOption(compare: string | undefined): 'auto' | 'llama.cpp' | 'none' {
  if (compare === undefined) return 'auto';
  if (compare !== 'auto' && compare !== 'llama.cpp' && compare !== 'none')
    throw new UsageError(`Expected llama.cpp, none or auto for --compare but received ${JSON.stringify(compare)}`);
  return compare;
}

export interface BenchArgs {
  help: boolean;
  settings: Omit<BenchSettings, 'backends'>;
  /** The backends named with --backend, or null for every available one. */
  backends: BackendName[] | null;
  json: boolean;
  out: string | null;
  progress: boolean;
}

const BACKENDS: BackendName[] = ['metal', 'emulated', 'native', 'js'];
const SCENARIOS: Record<string, ScenarioName[]> = { sampler: ['sampler'], decode: ['decode'], all: ['sampler', 'decode'] };

function integer(flag: string, value: string | undefined, fallback: number, max: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`Expected an integer from ${min} to ${max} for --${flag} but received ${JSON.stringify(value)}`);
  }
  return n;
}

// parseArgs reads "--vocab -5" as a flag missing its value ("ambiguous");
// the value is meant, so it is passed as --vocab=-5 and checked as a value.
function attachNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (/^--[a-z-]+$/.test(argv[i]) && /^-\d/.test(argv[i + 1] ?? '')) out.push(`${argv[i]}=${argv[++i]}`);
    else out.push(argv[i]);
  }
  return out;
}

// --out is written after the whole run: a place it cannot be written to
// is an error before the run, not a stack trace after it.
function checkOutputPath(out: string): void {
  const dir = dirname(resolve(out));
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new UsageError(`Expected a file in an existing directory for --out but received ${JSON.stringify(out)} (there is no directory ${dir})`);
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new UsageError(`Expected a file in a writable directory for --out but received ${JSON.stringify(out)} (${dir} is not writable)`);
  }
}

/** The arguments after `bench`. */
export function parseBenchArgs(argv: string[]): BenchArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: attachNegativeValues(argv),
      allowPositionals: true,
      strict: true,
      options: {
        backend: { type: 'string', multiple: true },
        vocab: { type: 'string', multiple: true },
        iterations: { type: 'string' },
        shape: { type: 'string' },
        tokens: { type: 'string' },
        chunk: { type: 'string' },
        'model-vocab': { type: 'string' },
        dim: { type: 'string' },
        seed: { type: 'string' },
        compare: { type: 'string' },
        json: { type: 'boolean' },
        out: { type: 'string' },
        'no-progress': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) throw new UsageError(`Expected one scenario but received ${positionals.map((p) => JSON.stringify(p)).join(' ')}`);
  const scenario = positionals[0] ?? 'all';
  if (!(scenario in SCENARIOS))
    throw new UsageError(`Expected a scenario (${Object.keys(SCENARIOS).join(', ')}) but received ${JSON.stringify(scenario)}`);

  const backends =
    values.backend?.map((b) => {
      if (!BACKENDS.includes(b as BackendName))
        throw new UsageError(`Expected one of ${BACKENDS.join(', ')} for --backend but received ${JSON.stringify(b)}`);
      return b as BackendName;
    }) ?? null;
  const shape = values.shape ?? 'lm';
  if (shape !== 'lm' && shape !== 'flat') throw new UsageError(`Expected lm or flat for --shape but received ${JSON.stringify(shape)}`);
  const out = values.out ?? null;
  if (out !== null && !/\.(svg|html)$/i.test(out))
    throw new UsageError(`Expected a file name ending in .svg or .html for --out but received ${JSON.stringify(out)}`);
  if (out !== null) checkOutputPath(out);

  return {
    help: values.help ?? false,
    backends: backends && [...new Set(backends)],
    json: values.json ?? false,
    out,
    progress: !(values['no-progress'] ?? false),
    settings: {
      scenarios: SCENARIOS[scenario],
      vocabs: values.vocab ? [...new Set(values.vocab.map((v) => integer('vocab', v, 0, 1 << 24)))] : BENCH_VOCABS,
      shape,
      iterations: values.iterations === undefined ? null : integer('iterations', values.iterations, 0, 1_000_000),
      decode: {
        vocab: integer('model-vocab', values['model-vocab'], 4096, 1 << 20),
        dim: integer('dim', values.dim, 64, 4096),
        tokens: integer('tokens', values.tokens, 64, 1 << 20),
        chunkSize: integer('chunk', values.chunk, 16, 65536),
      },
      seed: integer('seed', values.seed, 7, 0xffffffff, 0),
      compare: compareOption(values.compare),
    },
  };
}
