// sample-demo.ts: `npm run demo`. Generates text one token at a time with
// sample(): a byte-level bigram model counted from the paragraph below gives
// each next token's logits. Every available backend decodes with the same
// seed (including 'emulated': the .metal kernels on CPU fibers), and the
// texts match. Logits are float16, as a model on the GPU produces them.
//
// (The GPU-chained decode loop and its demo arrive with the model and
// generate() API; this shows the sampler they are built on.)
import { getBackends, sample, selectBackend, toFloat16Array, type SampleOptions } from '../lib/index.js';

const CORPUS = `Sampling is usually a round trip per token: copy the logits to the CPU,
softmax, sort, draw. The Gumbel-max trick turns sampling into an argmax: add
seeded noise to every logit, scaled by the temperature, and take the largest.
Argmax is already on the GPU for greedy decoding, so sampled decoding can cost
the same as greedy decoding, and every backend draws the same token for the
same seed and position.`;

/** logits[prev][next] = ln(count of the byte pair + 0.01), as float16 bits. */
function bigramLogits(text: string): Uint16Array[] {
  const bytes = Buffer.from(text, 'utf8');
  const counts = Array.from({ length: 256 }, () => new Float32Array(256));
  for (let i = 1; i < bytes.length; i++) counts[bytes[i - 1]][bytes[i]]++;
  return counts.map((row) => toFloat16Array(Array.from(row, (c) => Math.log(c + 0.01))));
}

function generate(model: Uint16Array[], prompt: string, tokens: number, options: SampleOptions) {
  const history = [...Buffer.from(prompt, 'utf8')];
  const start = process.hrtime.bigint();
  for (let i = 0; i < tokens; i++) {
    const logits = model[history[history.length - 1]];
    history.push(sample(logits, { ...options, history, position: history.length }));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { text: Buffer.from(history).toString('utf8'), tokensPerSecond: tokens / seconds };
}

const model = bigramLogits(CORPUS);
const prompt = 'The ';
const tokens = 240;
const options: SampleOptions = {
  temperature: 0.7, topK: 40, topP: 0.95, minP: 0.02, seed: 2026,
  repeatPenalty: { penalty: 1.1, lastTokens: 16 },
};

console.log('backends:');
for (const b of getBackends()) console.log(`  ${b.name}: ${b.available ? 'available' : 'unavailable'} (${b.reason.split('\n')[0]})`);
console.log(`auto selects: ${selectBackend('auto')}\n`);

const texts = new Set<string>();
for (const b of getBackends().filter((b) => b.available)) {
  const { text, tokensPerSecond } = generate(model, prompt, tokens, { ...options, backend: b.name });
  texts.add(text);
  console.log(`--- ${b.name}: ${tokens} tokens, ${tokensPerSecond.toFixed(0)} tokens/s (V = 256, sampling only)`);
  console.log(text + '\n');
}
console.log(texts.size === 1 ? 'every backend generated the same text.' : 'the backends generated different texts!');
process.exitCode = texts.size === 1 ? 0 : 1;
