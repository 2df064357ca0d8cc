// The benchmark command: its argument errors, its --json report against
// bench/report.schema.json, its charts, and a short run of the real `bin`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';

import { findLlamaSampler } from '../lib/bench/llama-cpp-sampler.js';
import type { BenchReport } from '../lib/bench/report.js';
import { getBackends } from '../lib/index.js';
import { requireNativeBuilt, runCli } from './helpers.js';

requireNativeBuilt();

// Small enough to run in seconds on every backend, emulated included.
const TINY = ['--vocab', '64', '--iterations', '2', '--tokens', '4', '--model-vocab', '64', '--dim', '8'];
const available = getBackends()
  .filter((b) => b.available)
  .map((b) => b.name);

describe('arguments', () => {
  it.each([
    [['bench', 'speed'], 'Expected a scenario (sampler, decode, all) but received "speed"'],
    [['bench', 'sampler', 'decode'], 'Expected one scenario but received "sampler" "decode"'],
    [['bench', '--vocab', '0'], 'Expected an integer from 1 to 16777216 for --vocab but received "0"'],
    [['bench', '--vocab', '12k'], 'Expected an integer from 1 to 16777216 for --vocab but received "12k"'],
    [['bench', '--iterations', '-1'], 'Expected an integer from 1 to 1000000 for --iterations but received "-1"'],
    [['bench', '--vocab', '-5'], 'Expected an integer from 1 to 16777216 for --vocab but received "-5"'],
    [
      ['bench', '--out', 'no/such/dir/report.svg'],
      `Expected a file in an existing directory for --out but received "no/such/dir/report.svg" (there is no directory ${resolve('no/such/dir')})`,
    ],
    [['bench', '--iterations', '2.5'], 'Expected an integer from 1 to 1000000 for --iterations but received "2.5"'],
    [['bench', '--seed', '4294967296'], 'Expected an integer from 0 to 4294967295 for --seed but received "4294967296"'],
    [['bench', '--backend', 'gpu'], 'Expected one of metal, emulated, native, js for --backend but received "gpu"'],
    [['bench', '--shape', 'round'], 'Expected lm or flat for --shape but received "round"'],
    [['bench', '--compare', 'vllm'], 'Expected llama.cpp, none or auto for --compare but received "vllm"'],
    [['bench', '--out', 'report.png'], 'Expected a file name ending in .svg or .html for --out but received "report.png"'],
    [['bench', '--fast'], "Unknown option '--fast'"],
    [['bench', '--vocab'], "Option '--vocab <value>' argument missing"],
  ])('%j is a usage error (exit 2) that says what is wrong', async (argv, message) => {
    const { code, stdout, stderr } = await runCli(...argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`metal-decode bench: ${message}`);
    expect(stderr).toContain('Run metal-decode bench --help for the options.');
  });

  it('an unknown command, no command, and --help', async () => {
    expect(await runCli('benchmark')).toMatchObject({ code: 2, stderr: expect.stringContaining('metal-decode: unknown command "benchmark"') });
    expect(await runCli()).toMatchObject({ code: 2, stdout: expect.stringContaining('Usage: metal-decode <command>') });
    const help = await runCli('bench', '--help');
    expect(help.code).toBe(0);
    for (const flag of ['--backend', '--vocab', '--iterations', '--json', '--out', '--shape', '--tokens', '--chunk', '--seed']) {
      expect(help.stdout).toContain(flag);
    }
  });

  it('a backend named but unavailable is an error with its reason, not a silent skip', async () => {
    const unavailable = getBackends().find((b) => !b.available);
    if (!unavailable) {
      expect(available).toEqual(['metal', 'emulated', 'native', 'js']); // a Mac with everything built
      return;
    }
    const { code, stderr } = await runCli('bench', '--backend', unavailable.name, ...TINY);
    expect(code).toBe(1);
    expect(stderr).toBe(
      `metal-decode bench: --backend ${unavailable.name}: the ${unavailable.name} backend is not available: ${unavailable.reason}\n`,
    );
  });
});

describe('--json', () => {
  const schema = JSON.parse(readFileSync(new URL('../bench/report.schema.json', import.meta.url), 'utf8'));
  const ajv = new Ajv({ allErrors: true });
  addFormats.default(ajv);
  const validate = ajv.compile(schema);

  it('prints a report that follows bench/report.schema.json, with every cell and every backend', async () => {
    const { code, stdout, stderr } = await runCli('bench', ...TINY, '--json');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as BenchReport; // stdout is the JSON alone
    expect(validate(report), ajv.errorsText(validate.errors)).toBe(true);
    expect(stderr).toContain('machine: ');

    expect(report.settings).toMatchObject({ scenarios: ['sampler', 'decode'], backends: available, vocabs: [64], iterations: 2, seed: 7 });
    expect(report.backends.map((b) => b.name)).toEqual(['metal', 'emulated', 'native', 'js']);
    for (const b of report.backends.filter((b) => !b.available))
      expect(stderr).toContain(`backend ${b.name}: not available: ${b.reason.split('\n')[0]}`);
    // llama.cpp's sampler chain is a column of its own where its library is installed (node-llama-cpp's prebuilt binaries).
    const llama = findLlamaSampler();
    expect(report.llamaCppSampler).toEqual(llama);
    if (llama.reason !== null) expect(stderr).toContain(`llama.cpp sampler: not compared: ${llama.reason}`);
    expect(report.sampler).toHaveLength(4 * (available.length + (llama.library ? 1 : 0)));
    expect(report.decode).toHaveLength(2 * available.length);
    for (const r of report.sampler) {
      const js = report.sampler.find((j) => j.backend === 'js' && j.config === r.config)!;
      expect(r.speedupOverJs).toBeCloseTo(js.medianUs / r.medianUs, 10);
      expect(r.p90Us).toBeGreaterThanOrEqual(r.medianUs);
    }
    for (const r of report.decode) {
      const gpu = r.backend === 'emulated' || r.backend === 'metal';
      expect(r.chainedTokensPerSecond === null).toBe(!gpu);
      if (gpu) expect(r.chainedOverOne).toBeCloseTo(r.chainedTokensPerSecond! / r.onePerSubmissionTokensPerSecond, 10);
    }
    // Speculation: every backend x text x mode (the run checks the tokens are the same, or fails).
    expect(report.speculative!.map((r) => `${r.backend} ${r.text} ${r.mode}`)).toEqual(
      available.flatMap((b) => ['repetitive', 'free'].flatMap((t) => ['greedy', 'sampled'].map((m) => `${b} ${t} ${m}`))),
    );
    for (const r of report.speculative!) {
      expect(r.speculativeOverPlain).toBeCloseTo(r.speculativeTokensPerSecond / r.plainTokensPerSecond, 10);
      expect(r.acceptanceRate).toBeGreaterThanOrEqual(0);
      expect(r.acceptanceRate).toBeLessThanOrEqual(1);
    }
  });

  it('the filters choose what is measured', async () => {
    const { code, stdout } = await runCli(
      'bench',
      'sampler',
      '--backend',
      'native',
      '--vocab',
      '40',
      '--vocab',
      '80',
      '--iterations',
      '3',
      '--compare',
      'none',
      '--json',
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as BenchReport;
    expect(validate(report), ajv.errorsText(validate.errors)).toBe(true);
    expect(report.decode).toEqual([]);
    expect(report.speculative).toBeUndefined();
    expect(report.sampler.map((r) => [r.backend, r.vocab, r.iterations])).toEqual([40, 80].flatMap((v) => [1, 2, 3, 4].map(() => ['native', v, 3])));
    expect(report.sampler.every((r) => r.speedupOverJs === null)).toBe(true); // js was not measured
    expect(report.llamaCppSampler).toEqual({ library: null, reason: '--compare none' });
  });

  // node-llama-cpp is a dev dependency: its prebuilt libllama is here, so
  // the comparison runs (the run checks llama.cpp's greedy tokens against
  // the rows' argmax, so a library it misreads fails instead of timing).
  it("--compare llama.cpp times llama.cpp's sampler chain on the same rows, with native's ratio to it", async () => {
    const { code, stdout } = await runCli('bench', 'sampler', '--backend', 'native', '--vocab', '300', '--iterations', '3', '--compare', 'llama.cpp');
    expect(code).toBe(0);
    const table = stdout.split('\n').filter((line) => /^300 /.test(line));
    expect(stdout).toMatch(/V\s+config\s+llama\.cpp\s+native\s+native vs llama\.cpp/);
    expect(table).toHaveLength(4);
    for (const line of table) expect(line).toMatch(/\d+(\.\d+)? \(\d+(\.\d+)?\)\s+\d+(\.\d+)? \(\d+(\.\d+)?\)\s+\d+(\.\d+)?x$/);
    const json = JSON.parse(
      (await runCli('bench', 'sampler', '--backend', 'native', '--vocab', '300', '--iterations', '3', '--json')).stdout,
    ) as BenchReport;
    expect(validate(json), ajv.errorsText(validate.errors)).toBe(true);
    expect(json.llamaCppSampler.library).toMatch(/libllama[^/]*\.(so|dylib)$/);
    expect(json.sampler.filter((r) => r.backend === 'llama.cpp').map((r) => r.config)).toEqual([
      'greedy',
      'default chain',
      'topP 0.9',
      'temperature only',
    ]);
  }, 600_000); // 17 ms quiet, but 21 s and 150 s in two runs with both cores busy: 4x the longest

  it('the schema rejects a report with a missing field or a wrong value', () => {
    expect(validate({ schemaVersion: 1 })).toBe(false);
    expect(validate({ schemaVersion: 2 })).toBe(false);
  });
});

describe('--out', () => {
  const dir = mkdtempSync(join(tmpdir(), 'metal-decode-bench-'));

  it('writes an SVG chart with a bar per measured cell', async () => {
    const file = join(dir, 'report.svg');
    const { code, stdout } = await runCli('bench', ...TINY, '--backend', 'native', '--backend', 'js', '--compare', 'none', '--out', file);
    expect(code).toBe(0);
    expect(stdout).toContain(`wrote ${file}`);
    const svg = readFileSync(file, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    // 8 sampler bars (4 configs x 2 backends) and 4 decode bars (no chain on the CPU).
    expect(svg.match(/class="bar"/g)).toHaveLength(8 + 4);
    expect(svg).toContain('V=64 default chain');
    // Axes with ticks in µs and tokens/s, and a legend of the backends in each chart.
    expect(svg.match(/class="tick"/g)!.length).toBeGreaterThanOrEqual(4);
    expect(svg).toMatch(/>1 µs<|>10 µs<|>100 µs</);
    expect(svg).toMatch(/>0 tokens\/s</);
    expect(svg.match(/class="swatch"/g)).toHaveLength(2 + 2);
    expect(svg).not.toMatch(/\d us\b/);
    // Every text starts inside the view and its estimated width fits in it.
    const width = Number(/viewBox="0 0 (\d+) /.exec(svg)![1]);
    for (const [, x, anchor, text] of svg.matchAll(/<text x="([\d.]+)"[^>]*?(text-anchor="\w+")?[^>]*>([^<]*)</g)) {
      const end = Number(x) + (anchor ? 0 : text.length * 6.2);
      expect(end, text).toBeLessThanOrEqual(width);
    }
  });

  it('writes an HTML page with the machine, the chart, the tables and the unavailable backends', async () => {
    const file = join(dir, 'report.html');
    expect((await runCli('bench', 'decode', ...TINY, '--backend', 'native', '--out', file)).code).toBe(0);
    const html = readFileSync(file, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg');
    expect(html).toContain('<th>one per submission</th>');
    for (const b of getBackends().filter((b) => !b.available)) expect(html).toContain(`${b.name}: not available`);
  });
});

describe('the bin', () => {
  it('a short run of `metal-decode bench` completes and prints its tables', () => {
    const bin = new URL('../bin/metal-decode.js', import.meta.url).pathname;
    const result = spawnSync(process.execPath, [bin, 'bench', ...TINY, '--backend', 'native'], { encoding: 'utf8', timeout: 60_000 });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^machine: .+, \d+ cores, .*Node v\d+.*metal-decode \d+\.\d+\.\d+/);
    expect(result.stdout).toContain('sampler: us per sample() call, median (p90)');
    expect(result.stdout).toMatch(/64 +default chain +[\d.]+ \([\d.]+\)/);
    expect(result.stdout).toContain('decode: tokens/s of the bigram model (V=64, d=8) through generate()');
  });
});
