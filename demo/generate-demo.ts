// generate-demo.ts: `npm run demo`. A byte-level bigram model counted from
// the paragraphs below generates text on a Session, streamed as it comes
// (multi-byte characters split over several byte tokens are never printed
// half), three prompts in a row without prefilling again. Then the first
// prompt runs on every available backend with the same seed: the same text
// everywhere, at each backend's speed.
import { BigramModel, generate, getBackends, Session, type GenerateOptions, type GenerationResult } from '../lib/index.js';

const CORPUS = `Sampling is usually a round trip per token: copy the logits to the CPU,
soften them with a temperature, sort, draw. The Gumbel-max trick turns the draw
into an argmax: add seeded noise to every logit and take the largest.

Argmax already runs on the GPU for greedy decoding, so sampled decoding costs
the same as greedy decoding, and every backend draws the same token for the
same seed and position — on a Mac, in CI, or in a café in Zürich.

A dispatch table records the forward pass once and replays it for many tokens
in one command buffer. The token each step writes is the token the next step
reads, so the CPU only streams the text: “never half a character”, even when
a character such as é, → or 🙂 spans four byte tokens.`;

const OPTIONS: GenerateOptions = {
  temperature: 0.6,
  topK: 40,
  topP: 0.95,
  minP: 0.05,
  seed: 2026,
  repeatPenalty: { penalty: 1.15, lastTokens: 24 },
  maxTokens: 200,
};

function statsLine(r: GenerationResult): string {
  const s = r.stats;
  return (
    `[${r.stats.generatedTokens} tokens, stop: ${r.stopReason}, path: ${r.path}${r.chained ? ' (chained)' : ''} on ${r.backend}; ` +
    `prefill ${s.promptTokens} tokens in ${s.prefillMs.toFixed(2)} ms, decode ${s.decodeMs.toFixed(1)} ms = ${s.decodeTokensPerSecond.toFixed(0)} tokens/s]`
  );
}

const model = BigramModel.fromText(CORPUS);
console.log(`model: byte-level bigram, ${model.vocabSize} tokens (256 bytes + end of paragraph)`);
console.log('backends:');
for (const b of getBackends()) console.log(`  ${b.name}: ${b.available ? 'available' : 'unavailable'} (${b.reason.split('\n')[0]})`);

// One session, three turns: each continues the sequence the last one left.
{
  using session = new Session(model);
  console.log(`\nsession on ${session.backend}, streaming:\n`);
  for (const prompt of ['Sampling ', ' The GPU ', ' A café ']) {
    process.stdout.write(prompt);
    const generation = session.generate(prompt, OPTIONS);
    for await (const { text } of generation) process.stdout.write(text);
    console.log(`\n${statsLine(await generation)}\n`);
  }
  console.log(`the session holds ${session.tokens.length} tokens`);
}

// The first turn again on every backend: the same seed gives the same text.
console.log('\nthe first prompt on every available backend:');
const texts = new Set<string>();
for (const b of getBackends().filter((b) => b.available)) {
  const result = await generate(model, 'Sampling ', { ...OPTIONS, backend: b.name });
  texts.add(result.text);
  console.log(`  ${b.name.padEnd(8)} ${statsLine(result)}`);
}
console.log(texts.size === 1 ? 'every backend generated the same text.' : 'the backends generated different texts!');
process.exitCode = texts.size === 1 ? 0 : 1;
