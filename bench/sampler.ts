// sampler.ts: `npm run bench:sampler`: median us/token of sample() per
// backend, vocabulary size, configuration and logit shape, with native's
// speed-up over js measured in the same run. The slow backends (js, and
// emulated: the Metal kernels on CPU fibers) run fewer iterations.
//
//   node dist/bench/sampler.js [--vocab 128256] [--iterations 200] [--shape lm|flat]
//                              [--backend native --backend emulated ...]
import { parseArgs } from 'node:util';
import os from 'node:os';

import { getBackends, sample } from '../lib/index.js';
import { float16Row, type RowShape } from './logit-rows.js';
import { BENCH_VOCABS, SAMPLER_CONFIGS } from './sampler-configs.js';
import { median, quantile, timeCalls } from './stats.js';

const { values: args } = parseArgs({
  options: {
    vocab: { type: 'string', multiple: true },
    iterations: { type: 'string', default: '200' },
    shape: { type: 'string', multiple: true },
    'js-iterations': { type: 'string', default: '15' },
    backend: { type: 'string', multiple: true },
  },
});
const vocabs = args.vocab?.map(Number) ?? BENCH_VOCABS;
const shapes = (args.shape ?? ['lm', 'flat']) as RowShape[];
const iterations = Number(args.iterations);
const jsIterations = Number(args['js-iterations']);
for (const n of [...vocabs, iterations, jsIterations]) {
  if (!Number.isInteger(n) || n <= 0) throw new RangeError(`Expected positive integers for --vocab and --iterations but received ${n}`);
}

const backends = getBackends();
console.log(`machine: ${os.cpus()[0]?.model} x${os.cpus().length}, Node ${process.version}, ${os.platform()}-${os.arch()}`);
for (const b of backends) if (!b.available) console.log(`backend ${b.name} unavailable: ${b.reason}`);
const usable = backends.filter((b) => b.available && (!args.backend || args.backend.includes(b.name))).map((b) => b.name);

console.log('\nfloat16 logits; us per sample() call, median (p90)');
const ratioColumn = usable.includes('native') && usable.includes('js');
console.log(['shape', 'V', 'config', ...usable, ratioColumn ? 'native vs js' : ''].join('\t'));
for (const shape of shapes) {
  for (const vocab of vocabs) {
    const rows = Array.from({ length: 4 }, (_, i) => float16Row(vocab, shape, 1000 + i));
    for (const [name, config] of Object.entries(SAMPLER_CONFIGS)) {
      const medians: Record<string, number> = {};
      const cells: string[] = [];
      for (const backend of usable) {
        const n = backend === 'js' || backend === 'emulated' ? jsIterations : iterations;
        const samples = timeCalls((i) => sample(rows[i % rows.length], { ...config, backend, seed: 7, position: i }), n, Math.min(n, 10));
        medians[backend] = median(samples);
        cells.push(`${medians[backend].toFixed(1)} (${quantile(samples, 0.9).toFixed(1)})`);
      }
      const ratio = ratioColumn ? `${(medians.js / medians.native).toFixed(1)}x` : '';
      console.log([shape, vocab, name, ...cells, ratio].join('\t'));
    }
  }
}
