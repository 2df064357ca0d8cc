// The backends agree, measured as docs/sampling.md's "Agreement"
// describes: random cases over V = 1..262144,
// float16 and float32, realistic and heavily tied logits, every parameter
// combination, histories with repeats and out-of-range ids, token masks
// (a grammar's) from none allowed to all. Greedy must
// agree always; sampled on >= 99.9% of cases, each disagreement explained by
// a near-tie of the two tokens' scores or of a top-p boundary mass. Pairs:
// native vs js, and the kernels (emulated; metal on a Mac) vs native.
import { describe, expect, it } from 'vitest';

import { logitValues, normal, seededRandom } from '../lib/bench/logit-rows.js';
import { sample, toFloat16Array, type SampleOptions } from '../lib/index.js';
import { editedLogits } from '../lib/js/js-sampler.js';
import { mdExp, noiseKey, tokenNoise } from '../lib/js/noise.js';
import { resolveSampling } from '../lib/sampling-options.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const CASES = 10000;
const GPU_CASES = 3000;
const f = Math.fround;

function randomCase(random: () => number, index: number): { logits: Float32Array | Uint16Array; options: SampleOptions } {
  const vocab = Math.max(1, Math.floor(Math.exp(random() * Math.log(262144))));
  const shape = index % 4;
  let values: Float32Array;
  if (shape === 0) values = logitValues(vocab, 'lm', index);
  else if (shape === 1) values = logitValues(vocab, 'flat', index);
  else if (shape === 2)
    values = logitValues(vocab, 'flat', index).map((v) => Math.round(v)); // heavy ties
  else values = Float32Array.from({ length: vocab }, () => normal(random) * (0.1 + 5 * random()));
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  const options: SampleOptions = {
    temperature: random() < 0.15 ? 0 : pick([0.2, 0.7, 1, 1.5]) * (0.5 + random()),
    topK: pick([0, 1, 5, 40, 1000, vocab]),
    topP: random() < 0.35 ? 1 : 0.05 + 0.94 * random(),
    minP: random() < 0.4 ? 0 : 0.3 * random(),
    seed: Math.floor(random() * 2 ** 32),
    position: Math.floor(random() * 2 ** 32),
    filterTemperature: random() < 0.5 ? 'sampling' : 'unit',
  };
  if (random() < 0.4) {
    options.repeatPenalty = {
      penalty: 0.8 + random(),
      frequencyPenalty: random() - 0.5,
      presencePenalty: random() - 0.5,
      lastTokens: pick([0, 8, 64]),
    };
    options.history = Array.from({ length: 80 }, () => Math.floor(random() * (vocab + 10)) % (random() < 0.5 ? 10 : vocab + 10));
  }
  if (random() < 0.3) {
    options.logitBias = new Map(Array.from({ length: 4 }, () => [Math.floor(random() * (vocab + 4)), random() < 0.2 ? -Infinity : 4 * random() - 2]));
  }
  if (random() < 0.25) {
    // A grammar's mask: most tokens refused, or most allowed; sometimes one token or none.
    const density = pick([0, 0.001, 0.05, 0.5, 0.99]);
    options.mask = new Uint32Array(Math.ceil(vocab / 32));
    for (let t = 0; t < vocab; t++) if (random() < density) options.mask[t >>> 5] |= 1 << (t & 31);
  }
  return { logits: index % 2 ? values : toFloat16Array(values), options };
}

/** Why two backends may differ on this case, per docs/sampling.md, or undefined. */
function explain(logits: Float32Array | Uint16Array, options: SampleOptions, a: number, b: number): string | undefined {
  const s = resolveSampling(options);
  const z = editedLogits(logits, s);
  const key = noiseKey(s.seed, s.position);
  const score = (i: number) => f(z[i] + f(s.temperature * tokenNoise(key, i)));
  const [sa, sb] = [score(a), score(b)];
  if (Math.abs(sa - sb) <= 1e-5 * Math.max(1, Math.abs(sa))) return `near-tie of scores ${sa} and ${sb}`;
  if (s.topP < 1) {
    const sorted = Float32Array.from(z).sort().reverse();
    const max = sorted[0],
      tf = s.unitFilterTemperature ? 1 : s.temperature;
    const tauK = s.topK > 0 && s.topK < z.length ? sorted[s.topK - 1] : -Infinity;
    const kept = sorted.filter((v) => v >= tauK);
    const weights = kept.map((v) => mdExp(f(f(v - max) / tf)));
    const total = weights.reduce((x, y) => x + y, 0);
    let cumulative = 0;
    for (const w of weights) {
      cumulative += w;
      if (Math.abs(cumulative - s.topP * total) <= 1e-5 * total) return 'top-p boundary mass';
    }
  }
  return undefined;
}

type Backend = 'native' | 'js' | 'emulated' | 'metal';

/** Runs `cases` random cases on two backends, as docs/sampling.md measures agreement. */
function measureAgreement(a: Backend, b: Backend, cases: number, seed: number, onlyFloat16: boolean): void {
  const random = seededRandom(seed);
  let greedyCases = 0,
    sampledCases = 0,
    sampledAgree = 0;
  const unexplained: string[] = [];
  for (let i = 0; i < cases; i++) {
    const generated = randomCase(random, i);
    const { options } = generated;
    const logits = onlyFloat16 && generated.logits instanceof Float32Array ? toFloat16Array(generated.logits) : generated.logits;
    const run = (backend: Backend) => {
      try {
        return sample(logits, { ...options, backend });
      } catch (e) {
        return (e as Error).name;
      }
    };
    const [first, second] = [run(a), run(b)];
    if (options.temperature === 0) {
      greedyCases++;
      expect(first, `greedy case ${i}`).toBe(second);
      continue;
    }
    sampledCases++;
    if (first === second) {
      sampledAgree++;
      continue;
    }
    const why = typeof first === 'number' && typeof second === 'number' ? explain(logits, options, first, second) : undefined;
    if (!why) unexplained.push(`case ${i} (V=${logits.length}): ${a} ${first}, ${b} ${second}`);
  }
  const rate = sampledAgree / sampledCases;
  console.log(`${a} vs ${b}: greedy ${greedyCases}/${greedyCases} (100%), sampled ${sampledAgree}/${sampledCases} (${(100 * rate).toFixed(3)}%)`);
  expect(unexplained).toEqual([]);
  expect(rate).toBeGreaterThanOrEqual(0.999);
}

describe('native and js samplers', () => {
  it(`agree on ${CASES} random cases`, () => measureAgreement('native', 'js', CASES, 20261120, false));

  it('count a token repeated more than 2^24 times alike (the count becomes float32 before the product)', () => {
    // Token 1 is penalised by 0.75 x (2^24 + 1): 12582912 with the count
    // rounded to float32 first, 12582913 if the product were exact. Token 0
    // sits at -12582913, so the argmax tells the two apart.
    const count = 2 ** 24 + 1;
    const history = new Uint32Array(count).fill(1);
    const logits = new Float32Array([-12582913, 0]);
    const options = { history, repeatPenalty: { penalty: 1, lastTokens: count, frequencyPenalty: 0.75 } };
    expect(sample(logits, { ...options, backend: 'native' })).toBe(1);
    expect(sample(logits, { ...options, backend: 'js' })).toBe(1);
  });
});

// The TypeScript sampler reads float16 rows through block maxima and an
// arithmetic bin that is exact except for -0, +inf and the NaNs
// (lib/js/half-row.ts): rows full of them, and filters whose boundary is
// the bin of 0 (where -0 and +0 tie), must give the native tokens exactly.
describe('native and js samplers on float16 rows with special values', () => {
  const SPECIALS = [0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00, 0xffff, 0x8000, 0x0000];

  function specialRow(random: () => number, vocab: number, density: number): Uint16Array {
    const row = toFloat16Array(logitValues(vocab, random() < 0.5 ? 'lm' : 'flat', Math.floor(random() * 1e6)));
    for (let i = 0; i < vocab; i++) if (random() < density) row[i] = SPECIALS[Math.floor(random() * SPECIALS.length)];
    return row;
  }

  it('agree on rows sprinkled with +-inf, NaNs and signed zeros', () => {
    const random = seededRandom(20261124);
    let compared = 0;
    for (let c = 0; c < 400; c++) {
      const vocab = [70, 1000, 5000, 40000][c % 4];
      const logits = specialRow(random, vocab, [0.001, 0.02, 0.3][c % 3]);
      const options: SampleOptions = {
        temperature: [0, 0.7, 2, 30][Math.floor(random() * 4)],
        topK: [0, 3, 40, 5000][Math.floor(random() * 4)],
        topP: random() < 0.5 ? 1 : 0.9,
        minP: random() < 0.7 ? 0 : 0.05,
        seed: c,
        position: c * 7,
      };
      if (c % 5 === 0)
        options.logitBias = new Map([
          [Math.floor(random() * vocab), 3],
          [Math.floor(random() * vocab), -Infinity],
        ]);
      const native = sample(logits, { ...options, backend: 'native' });
      expect(sample(logits, { ...options, backend: 'js' }), `case ${c}`).toBe(native);
      compared++;
    }
    expect(compared).toBe(400);
  });

  it("keep -0 where the filters' boundary is the bin of 0", () => {
    // Three tokens at 1, 300 at -0, 300 at +0, the rest negative: top-k 4
    // keeps every zero, and a hot draw picks -0 tokens as often as +0 ones.
    const vocab = 3000;
    const logits = new Uint16Array(vocab).fill(0xc000); // -2
    for (let i = 0; i < 3; i++) logits[i * 997] = 0x3c00; // 1
    for (let i = 0; i < 600; i++) logits[5 + i * 4] = i % 2 ? 0x8000 : 0x0000;
    let negativeZeros = 0;
    for (let seed = 0; seed < 300; seed++) {
      const options: SampleOptions = { temperature: 20, topK: 4, seed, position: seed };
      const token = sample(logits, { ...options, backend: 'js' });
      expect(token, `seed ${seed}`).toBe(sample(logits, { ...options, backend: 'native' }));
      if (logits[token] === 0x8000) negativeZeros++;
    }
    expect(negativeZeros).toBeGreaterThan(50);
  });
});

// The kernels sample float16 rows: every case is given as float16.
describe.each(GPU_BACKENDS)('%s kernels and the native sampler', (backend) => {
  it(`agree on ${GPU_CASES} random float16 cases`, () => measureAgreement(backend, 'native', GPU_CASES, 20261121, true));
});

describe('the largest temperatures', () => {
  it("every backend gives the same token up to the largest accepted temperature, and the limit is the addon's", async () => {
    const { loadAddon } = await import('../lib/native/load-addon.js');
    const { MAX_TEMPERATURE } = await import('../lib/sampling-options.js');
    const addon = loadAddon();
    if (!addon.ok) throw new Error(addon.reason);
    expect(addon.addon.layouts.maxTemperature).toBe(Math.fround(MAX_TEMPERATURE));
    // One or two tokens at the largest temperatures: where T x noise used to overflow.
    for (const values of [[1], [1, 2], [-Infinity, 3], [5, 5]]) {
      const row = toFloat16Array(values);
      for (const temperature of [1e20, 1e29, MAX_TEMPERATURE]) {
        for (let seed = 0; seed < 20; seed++) {
          const tokens = [...GPU_BACKENDS, 'native', 'js'].map((backend) =>
            sample(row, { backend: backend as never, temperature, seed, topK: 0, topP: 1 }),
          );
          expect(new Set(tokens).size, `${values} T=${temperature} seed=${seed}: ${tokens}`).toBe(1);
        }
      }
    }
  });
});

describe.each(GPU_BACKENDS)('long penalty windows and bias lists on %s', (backend) => {
  it('a 200,000-token window and a 50,000-entry bias list (tokens outside the vocabulary included) sample in linear time, as native does', () => {
    const vocab = 32000;
    const random = seededRandom(7);
    const logits = toFloat16Array(Array.from({ length: vocab }, () => normal(random) * 3));
    const history = Uint32Array.from({ length: 200_000 }, () => Math.floor(random() * (vocab + 100)));
    const logitBias = new Map<number, number>();
    for (let i = 0; i < 50_000; i++) logitBias.set(Math.floor(random() * vocab * 2), random() < 0.1 ? -Infinity : normal(random));
    const options: SampleOptions = {
      temperature: 0.8,
      topK: 0,
      topP: 0.9,
      seed: 3,
      history,
      logitBias,
      repeatPenalty: { penalty: 1.2, lastTokens: 200_000, frequencyPenalty: 0.01, presencePenalty: 0.1 },
    };
    const started = performance.now();
    const token = sample(logits, { ...options, backend });
    const ms = performance.now() - started;
    expect(token).toBe(sample(logits, { ...options, backend: 'native' }));
    console.log(`${backend}: window 200000, bias 50000: ${ms.toFixed(0)} ms`);
  });
});
