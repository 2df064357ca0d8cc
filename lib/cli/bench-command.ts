// bench-command.ts: `metal-decode bench` measures what the package costs
// here: it prints the machine, every backend that cannot run with its
// reason, a progress bar on a terminal, and the tables (or the JSON
// report), and can write the results as an SVG or HTML chart.
import { writeFileSync } from 'node:fs';

import cliProgress from 'cli-progress';

import { getBackends, type BackendInfo, type BackendName } from '../backends.js';
import { reportHtml, reportSvg } from '../bench/charts.js';
import { planDecode, planSpeculativeDecode } from '../bench/decode-scenario.js';
import { describeMachine, machineInfo } from '../bench/machine.js';
import {
  REPORT_SCHEMA_VERSION,
  type BenchReport,
  type BenchSettings,
  type DecodeResult,
  type SamplerResult,
  type SpeculativeDecodeResult,
} from '../bench/report.js';
import { findLlamaSampler } from '../bench/llama-cpp-sampler.js';
import { planSampler, withSpeedups } from '../bench/sampler-scenario.js';
import { reportTables, tableText, type Table } from '../bench/tables.js';
import type { BenchTask } from '../bench/tasks.js';
import { benchModel, modelBenchTables, type ModelBenchResult, type ModelBenchSettings } from '../bench/model-bench.js';
import { benchServe, serveBenchTables, type ServeBenchResult, type ServeBenchSettings } from '../bench/serve-bench.js';
import { benchTokenizer, tokenizerBenchTables, type TokenizerBenchResult, type TokenizerBenchSettings } from '../bench/tokenizer-bench.js';
import { predictSpeed, predictTables, type PredictResult, type PredictSettings } from '../bench/gpu-speed-model.js';
import {
  BENCH_USAGE,
  parseBenchArgs,
  parseModelBenchArgs,
  parsePredictArgs,
  parseServeBenchArgs,
  parseTokenizerBenchArgs,
  MODEL_BENCH_USAGE,
  PREDICT_USAGE,
  SERVE_BENCH_USAGE,
  TOKENIZER_BENCH_USAGE,
  UsageError,
  type BenchArgs,
} from './bench-args.js';
import type { Output } from './output.js';

/** `metal-decode bench ...`: `argv` after `bench`; resolves to the exit code. */
export async function benchCommand(rest: string[], stdout: Output, stderr: Output): Promise<number> {
  if (rest[0] === 'model') return fileBench(MODEL_BENCH, rest.slice(1), stdout, stderr);
  if (rest[0] === 'tokenizer') return fileBench(TOKENIZER_BENCH, rest.slice(1), stdout, stderr);
  if (rest[0] === 'predict') return fileBench(PREDICT, rest.slice(1), stdout, stderr);
  if (rest[0] === 'serve') return fileBench(SERVE, rest.slice(1), stdout, stderr);
  let args: BenchArgs;
  try {
    args = parseBenchArgs(rest);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    stderr.write(`metal-decode bench: ${error.message}\n\nRun metal-decode bench --help for the options.\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(`${BENCH_USAGE}\n`);
    return 0;
  }
  return bench(args, stdout, stderr);
}

interface FileBench<Settings, Result> {
  name: string;
  usage: string;
  parse: (argv: string[]) => { help: boolean; json: boolean; settings: Settings };
  run: (settings: Settings) => Promise<Result>;
  tables: (result: Result) => Table[];
}

const MODEL_BENCH: FileBench<ModelBenchSettings, ModelBenchResult> = {
  name: 'model',
  usage: MODEL_BENCH_USAGE,
  parse: parseModelBenchArgs,
  run: benchModel,
  tables: modelBenchTables,
};
const TOKENIZER_BENCH: FileBench<TokenizerBenchSettings, TokenizerBenchResult> = {
  name: 'tokenizer',
  usage: TOKENIZER_BENCH_USAGE,
  parse: parseTokenizerBenchArgs,
  run: benchTokenizer,
  tables: tokenizerBenchTables,
};

const SERVE: FileBench<ServeBenchSettings, ServeBenchResult> = {
  name: 'serve',
  usage: SERVE_BENCH_USAGE,
  parse: parseServeBenchArgs,
  run: benchServe,
  tables: serveBenchTables,
};

const PREDICT: FileBench<PredictSettings, PredictResult> = {
  name: 'predict',
  usage: PREDICT_USAGE,
  parse: parsePredictArgs,
  run: predictSpeed,
  tables: predictTables,
};

// `bench model`, `bench tokenizer`, `bench predict` and `bench serve`: one file, one result, tables or JSON.
async function fileBench<S, R>(bench: FileBench<S, R>, argv: string[], stdout: Output, stderr: Output): Promise<number> {
  let args: ReturnType<FileBench<S, R>['parse']>;
  try {
    args = bench.parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    stderr.write(`metal-decode bench ${bench.name}: ${error.message}\n\nRun metal-decode bench ${bench.name} --help for the options.\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(`${bench.usage}\n`);
    return 0;
  }
  (args.json ? stderr : stdout).write(`machine: ${describeMachine(machineInfo())}\n`);
  let result: R;
  try {
    result = await bench.run(args.settings);
  } catch (error) {
    stderr.write(`metal-decode bench ${bench.name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  if (args.json) stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else for (const table of bench.tables(result)) stdout.write(`\n${tableText(table)}\n`);
  return 0;
}

async function bench(args: BenchArgs, stdout: Output, stderr: Output): Promise<number> {
  const log = args.json ? stderr : stdout; // with --json, stdout holds the JSON alone
  const machine = machineInfo();
  const backends = getBackends();
  const chosen = chooseBackends(backends, args.backends);
  if (typeof chosen === 'string') {
    stderr.write(`metal-decode bench: ${chosen}\n`);
    return 1;
  }
  log.write(`machine: ${describeMachine(machine)}\n`);
  for (const b of backends.filter((b) => !b.available)) log.write(`backend ${b.name}: not available: ${b.reason.split('\n')[0]}\n`);

  const settings: BenchSettings = { ...args.settings, backends: chosen };
  const sampling = settings.scenarios.includes('sampler');
  const llamaCppSampler = settings.compare === 'none' ? { library: null, reason: '--compare none' } : findLlamaSampler();
  if (sampling && llamaCppSampler.reason !== null && settings.compare === 'llama.cpp') {
    stderr.write(`metal-decode bench: --compare llama.cpp: ${llamaCppSampler.reason}\n`);
    return 1;
  }
  if (sampling && llamaCppSampler.reason !== null && settings.compare === 'auto')
    log.write(`llama.cpp sampler: not compared: ${llamaCppSampler.reason}\n`);
  const samplerTasks = sampling ? planSampler(settings, llamaCppSampler) : [];
  const decodeTasks = settings.scenarios.includes('decode') ? planDecode(settings) : [];
  const speculativeTasks = settings.scenarios.includes('decode') ? planSpeculativeDecode(settings) : [];
  const startedAt = new Date();
  const progress = progressBar(args.progress && stderr.isTTY === true, samplerTasks.length + decodeTasks.length + speculativeTasks.length);
  const sampler = withSpeedups(await runTasks(samplerTasks, progress));
  const decode = await runTasks(decodeTasks, progress);
  const speculative = await runTasks(speculativeTasks, progress);
  progress.stop();

  const report: BenchReport = {
    schemaVersion: REPORT_SCHEMA_VERSION,
    machine,
    settings,
    backends,
    sampler,
    llamaCppSampler,
    decode,
    ...(speculativeTasks.length > 0 && { speculative }),
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
  };
  if (args.json) stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else for (const table of reportTables(report)) stdout.write(`\n${tableText(table)}\n`);
  if (args.out) {
    writeFileSync(args.out, args.out.toLowerCase().endsWith('.html') ? reportHtml(report) : reportSvg(report));
    log.write(`\nwrote ${args.out}\n`);
  }
  return 0;
}

// The backends to measure: the ones named (each must run here), or every available one.
function chooseBackends(all: BackendInfo[], named: BackendName[] | null): BackendName[] | string {
  if (named === null) return all.filter((b) => b.available).map((b) => b.name);
  for (const name of named) {
    const info = all.find((b) => b.name === name)!;
    if (!info.available) return `--backend ${name}: the ${name} backend is not available: ${info.reason}`;
  }
  return named;
}

interface Progress {
  step(label: string): void;
  stop(): void;
}

function progressBar(enabled: boolean, total: number): Progress {
  if (!enabled) return { step: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      format: '{bar} {value}/{total} {task}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { task: '' });
  return { step: (task) => bar.increment(1, { task }), stop: () => bar.stop() };
}

async function runTasks<T extends SamplerResult | DecodeResult | SpeculativeDecodeResult>(tasks: BenchTask<T>[], progress: Progress): Promise<T[]> {
  const results: T[] = [];
  for (const task of tasks) {
    progress.step(task.label);
    await new Promise((resolve) => setImmediate(resolve)); // let the bar draw before a long synchronous cell
    results.push(await task.run());
  }
  return results;
}
