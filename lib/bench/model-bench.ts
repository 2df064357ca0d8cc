// model-bench.ts: `metal-decode bench model --model FILE`: prefill and
// decode tokens/s and the time to the first token of a GGUF model on this
// package's CPU forward pass or its GPU dispatch tables (--backend), and of
// llama.cpp (node-llama-cpp, when it is installed) on the same file, the
// same threads and the same kind of device, in one run, so the ratios
// compare like with like. Medians over --runs runs.
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { generate } from '../generate/session.js';
import { loadModel } from '../gguf/load-model.js';
import type { GgufModel, GgufSequence } from '../models/gguf-model.js';
import type { Tokenizer } from '../generate/model.js';
import type { TableSequence } from '../gpu/table-sequence.js';
import { benchConstrained, type ConstrainedResult } from './constrained-bench.js';
import { benchFusedHead, type FusedHeadResult } from './head-bench.js';
import { promptOf, summary, type EngineResult, type Timings } from './engine-result.js';
import { timedDecode } from './timed-decode.js';
import type { Table } from './tables.js';
import { workerScript } from '../worker-script.js';

export type { EngineResult } from './engine-result.js';

export interface ModelBenchSettings {
  model: string;
  /** native: the CPU forward pass; metal / emulated: the dispatch tables on that device. */
  backend: 'native' | 'metal' | 'emulated';
  threads: number;
  promptTokens: number;
  generatedTokens: number;
  runs: number;
  /** 'auto': llama.cpp when node-llama-cpp is installed, saying why not otherwise. */
  compare: 'auto' | 'llama.cpp' | 'none';
  /** Also decode with n-gram speculation (exact verification) and report what it changes. */
  speculative: boolean;
  /** Also decode under a JSON schema and report the speed against unconstrained and the mask time. */
  constrained: boolean;
  /** Also decode with the LM head unfused (the logits sampled) against fused, greedy and temperature-only (native only). */
  fusedHead: boolean;
  /** loadModel's repack (false: --no-repack). */
  repack: boolean;
}

/** Decode with `speculative: true` against without, ours, on one prompt, in the same run. */
export interface SpeculationResult {
  /**
   * 'varied': the varied token prompt of the other measurements.
   * 'summarise': a request to summarise a passage, in the file's own
   * vocabulary (its tokenizer), the task where a trained model quotes its
   * prompt and n-gram drafts are kept.
   */
  task: 'varied' | 'summarise';
  promptTokens: number;
  /** Without speculation, on this prompt. */
  plainTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** decodeTokensPerSecond / plainTokensPerSecond */
  speedup: number;
  acceptanceRate: number;
  forwardPassesPerToken: number;
  /** Whether the tokens were those without speculation (they must be). */
  sameTokens: boolean;
}

export interface ModelBenchResult {
  settings: ModelBenchSettings;
  fileBytes: number;
  kvCacheBytes: number;
  /** Resident memory this package added (loaded, prompt evaluated, tokens generated). */
  residentBytes: number;
  /** What loadModel copied into the tiles' layouts (info.repackedBytes; 0 with --no-repack). */
  repackedBytes: number;
  engines: EngineResult[];
  /** this package / llama.cpp, when both ran. */
  ratios: { prefill: number; decode: number; timeToFirstToken: number } | null;
  /** With --speculative: the varied prompt, then the summarise task. */
  speculation: SpeculationResult[] | null;
  /** With --constrained. */
  constrained: ConstrainedResult | null;
  /** With --fused-head. */
  fusedHead: FusedHeadResult[] | null;
}

async function benchOurs(s: ModelBenchSettings): Promise<{
  result: EngineResult;
  kvCacheBytes: number;
  residentBytes: number;
  repackedBytes: number;
  vocab: number;
  speculation: SpeculationResult[] | null;
  constrained: ConstrainedResult | null;
  fusedHead: FusedHeadResult[] | null;
}> {
  const before = process.memoryUsage().rss;
  const loadStart = performance.now();
  const model = await loadModel(s.model, { threads: s.threads, repack: s.repack });
  const loadMs = performance.now() - loadStart;
  const contextSize = s.promptTokens + s.generatedTokens + 8;
  const prompt = promptOf(s.promptTokens, model.vocabSize);
  // End-of-text tokens are biased away: every run generates the same count.
  const logitBias = Object.fromEntries(model.eosTokens.map((t) => [String(t), -Infinity]));
  const t: Timings = { prefill: [], decode: [], ttft: [] };
  let kvCacheBytes = 0;
  try {
    for (let run = 0; run < s.runs + 1; run++) {
      const sequence = model.openSequence({ backend: s.backend, contextSize }) as GgufSequence | TableSequence;
      const start = performance.now();
      await sequence.evaluate(Uint32Array.from(prompt), 0);
      const prefill = performance.now() - start;
      kvCacheBytes = sequence.kvCacheBytes;
      sequence.dispose();
      const stamps: number[] = [];
      const began = performance.now();
      await generate(model, prompt, {
        temperature: 0,
        maxTokens: s.generatedTokens,
        contextSize,
        logitBias,
        backend: s.backend,
        onToken: () => void stamps.push(performance.now()),
      });
      if (run === 0) continue; // warm-up
      t.prefill.push(prefill);
      t.ttft.push(stamps[0] - began);
      t.decode.push((stamps[stamps.length - 1] - stamps[0]) / (stamps.length - 1));
    }
    const residentBytes = process.memoryUsage().rss - before;
    const speculation = s.speculative ? await benchSpeculation(s, model, prompt, logitBias) : null;
    const constrained = s.constrained ? await benchConstrained(s, model, prompt, logitBias) : null;
    const fusedHead = s.fusedHead ? await benchFusedHead(s, model, prompt, logitBias) : null;
    const note =
      s.backend === 'native'
        ? `${model.info.cpuKernels} kernels, ${model.info.threads} threads`
        : `${s.backend} dispatch tables, chained decode${s.backend === 'emulated' ? ' (CPU fibers: a check, not a speed)' : ''}`;
    return {
      result: summary(`metal-decode (${s.backend})`, t, s.promptTokens, note, residentBytes, loadMs),
      repackedBytes: model.info.repackedBytes,
      kvCacheBytes,
      residentBytes,
      vocab: model.vocabSize,
      speculation,
      constrained,
      fusedHead,
    };
  } finally {
    model.dispose();
  }
}

// What the summarise task asks about: prose whose summary would quote it.
const PASSAGE = [
  'The lighthouse keeper climbed the spiral stairs every evening at dusk. He trimmed the wick, polished the lens and wound the clockwork that turned the light.',
  'Ships passing the headland counted the flashes to know where they were: three short flashes and one long meant the northern reef, and safe water lay to the east.',
  'When the storm of the winter broke the lens, the keeper kept a lantern burning in the window all night, and the ships counted its steady glow instead.',
].join(' ');
const SUMMARISE = `Summarise the following passage in a few sentences, quoting its key phrases.\n\n${PASSAGE}\n\nSummary: The lighthouse keeper`;

// Greedy decode with and without n-gram speculation on each task's prompt:
// ms per token between the first and the last token, median of --runs
// after a warm-up, plain and speculative in the same run.
async function benchSpeculation(
  s: ModelBenchSettings,
  model: GgufModel,
  varied: number[],
  logitBias: Record<string, number>,
): Promise<SpeculationResult[]> {
  const tokenizer: Tokenizer = model.tokenizer;
  const summarise = Array.from(await (tokenizer.encodeAsync?.(SUMMARISE) ?? tokenizer.encode(SUMMARISE)));
  if (model.bosToken !== undefined) summarise.unshift(model.bosToken);
  const results: SpeculationResult[] = [];
  for (const [task, prompt] of [
    ['varied', varied],
    ['summarise', summarise],
  ] as const) {
    const contextSize = prompt.length + s.generatedTokens + 8;
    const decode = async (speculative: boolean) => {
      const timed = await timedDecode(
        model,
        prompt,
        { temperature: 0, maxTokens: s.generatedTokens, contextSize, logitBias, backend: s.backend, speculative },
        s.runs,
      );
      return { msPerToken: timed.msPerToken, result: timed.results[timed.results.length - 1] };
    };
    const plain = await decode(false);
    const speculative = await decode(true);
    const stats = speculative.result.stats.speculative!;
    results.push({
      task,
      promptTokens: prompt.length,
      plainTokensPerSecond: 1000 / plain.msPerToken,
      decodeTokensPerSecond: 1000 / speculative.msPerToken,
      speedup: plain.msPerToken / speculative.msPerToken,
      acceptanceRate: stats.acceptanceRate,
      forwardPassesPerToken: stats.forwardPassesPerToken,
      sameTokens: speculative.result.tokens.join() === plain.result.tokens.join(),
    });
  }
  return results;
}

// llama.cpp in a process of its own (llama-cpp-model-run.ts says why).
async function benchLlamaCppInChild(s: ModelBenchSettings, vocab: number): Promise<EngineResult> {
  const child = fileURLToPath(workerScript('bench/llama-cpp-model-child.js'));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [child, JSON.stringify({ settings: s, vocab })], {
      maxBuffer: 1 << 20,
    });
    return JSON.parse(stdout) as EngineResult;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`llama.cpp's run failed: ${stderr || (error as Error).message}`);
  }
}

export async function benchModel(s: ModelBenchSettings): Promise<ModelBenchResult> {
  const fileBytes = statSync(s.model).size;
  const ours = await benchOurs(s);
  const engines = [ours.result];
  if (s.compare !== 'none') engines.push(await benchLlamaCppInChild(s, ours.vocab));
  const theirs = engines[1];
  const ratios = theirs?.prefillTokensPerSecond
    ? {
        prefill: ours.result.prefillTokensPerSecond! / theirs.prefillTokensPerSecond,
        decode: ours.result.decodeTokensPerSecond! / theirs.decodeTokensPerSecond!,
        timeToFirstToken: ours.result.timeToFirstTokenMs! / theirs.timeToFirstTokenMs!,
      }
    : null;
  return {
    settings: s,
    fileBytes,
    kvCacheBytes: ours.kvCacheBytes,
    residentBytes: ours.residentBytes,
    repackedBytes: ours.repackedBytes,
    engines,
    ratios,
    speculation: ours.speculation,
    constrained: ours.constrained,
    fusedHead: ours.fusedHead,
  };
}

export function modelBenchTables(r: ModelBenchResult): Table[] {
  const n = (x: number | null, digits = 1) => (x === null ? '-' : x.toFixed(digits));
  const mb = (x: number) => `${(x / 2 ** 20).toFixed(0)} MiB`;
  const speed: Table = {
    title: `model: ${r.settings.model} on ${r.settings.backend}, prompt ${r.settings.promptTokens} tokens, ${r.settings.generatedTokens} generated, median of ${r.settings.runs} runs`,
    header: ['engine', 'prefill tok/s', 'decode tok/s', 'first token ms', 'notes'],
    rows: r.engines.map((e) => [e.engine, n(e.prefillTokensPerSecond), n(e.decodeTokensPerSecond, 2), n(e.timeToFirstTokenMs, 0), e.note]),
  };
  if (r.ratios)
    speed.rows.push([
      'ratio',
      `${r.ratios.prefill.toFixed(2)}x`,
      `${r.ratios.decode.toFixed(2)}x`,
      `${r.ratios.timeToFirstToken.toFixed(2)}x`,
      'metal-decode / llama.cpp (higher is better; first token: lower)',
    ]);
  for (const x of r.speculation ?? []) {
    speed.rows.push([
      `${r.engines[0].engine} + n-gram speculation, ${x.task === 'varied' ? 'varied prompt' : `summarise task (${x.promptTokens} prompt tokens)`}`,
      '-',
      n(x.decodeTokensPerSecond, 2),
      '-',
      `${x.speedup.toFixed(2)}x the decode without (${n(x.plainTokensPerSecond, 2)}); ${(100 * x.acceptanceRate).toFixed(0)}% of drafts kept, ` +
        `${x.forwardPassesPerToken.toFixed(2)} forward passes per token; ${x.sameTokens ? 'the same tokens' : 'OTHER TOKENS (a bug)'}`,
    ]);
  }
  const c = r.constrained;
  if (c) {
    speed.rows.push([
      `${r.engines[0].engine} under a JSON schema`,
      '-',
      n(c.constrainedTokensPerSecond, 2),
      '-',
      `${(100 * c.ratio).toFixed(0)}% of the decode without (${n(c.plainTokensPerSecond, 2)}); masks ${c.maskMsPerToken.toFixed(3)} ms per token at V ${c.vocabSize}; ` +
        `${c.constrainedTokens} tokens under the grammar`,
    ]);
  }
  for (const h of r.fusedHead ?? []) {
    speed.rows.push([
      `${r.engines[0].engine}, ${h.config}, LM head fused with the pick`,
      '-',
      n(h.fusedTokensPerSecond, 2),
      '-',
      `${h.speedup.toFixed(3)}x the decode with the logits sampled (${n(h.unfusedTokensPerSecond, 2)}); ${h.sameTokens ? 'the same tokens' : 'OTHER TOKENS (a bug)'}`,
    ]);
  }
  const budget = r.fileBytes + r.kvCacheBytes;
  // llama.cpp's, in its own process: its loaded library, model, context
  // and vocabulary. The load: ours repacks while loading (the copy in the
  // notes); llama.cpp's CPU build repacks some types too, inside its load.
  const memory: Table = {
    title: 'load time and resident memory each engine added',
    header: ['engine', 'load ms', 'resident', 'file + KV cache', 'ratio', 'notes'],
    rows: r.engines
      .filter((e) => e.residentBytes !== null)
      .map((e, i) => [
        e.engine,
        n(e.loadMs, 0),
        mb(e.residentBytes!),
        `${mb(r.fileBytes)} + ${mb(r.kvCacheBytes)}`,
        `${(e.residentBytes! / budget).toFixed(2)}x`,
        i === 0 ? `${mb(r.repackedBytes)} of weights repacked at load` : '',
      ]),
  };
  return [speed, memory];
}
