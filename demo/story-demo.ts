// story-demo.ts: `npm run demo -- --model FILE` (or METAL_DECODE_DEMO_MODEL=FILE):
// a story from a real GGUF model instead of the random-weight chat. It
// loads the file, continues "Once upon a time" greedily on the CPU,
// streamed, then the same on the emulated GPU tables (the Metal kernels run
// on the CPU), streamed, and says whether the tokens are the same; or why
// the emulated backend cannot start.
import { BackendUnavailableError, generate, loadModel } from '../lib/index.js';

const PROMPT = 'Once upon a time';

export async function tellStory(path: string, maxTokens = 120): Promise<void> {
  const model = await loadModel(path);
  try {
    const { info } = model;
    console.log(
      `\nloaded ${path}: ${info.architecture}, ${info.config.blockCount} layers, embedding ${info.config.embeddingLength}, ` +
        `${Object.entries(info.tensorTypes)
          .map(([t, n]) => `${n} ${t}`)
          .join(' + ')} tensors; CPU forward pass, ${info.cpuKernels} kernels, ${info.threads} threads`,
    );
    process.stdout.write(`CPU (greedy): ${PROMPT}`);
    const onCpu = await generate(model, PROMPT, {
      backend: 'native',
      temperature: 0,
      maxTokens,
      onTextChunk: (text) => void process.stdout.write(text),
    });
    console.log(`\n[${onCpu.tokens.length} tokens, stopped by ${onCpu.stopReason}, ${onCpu.stats.decodeTokensPerSecond.toFixed(0)} tokens/s]`);
    try {
      process.stdout.write(`emulated GPU (greedy): ${PROMPT}`);
      const onGpu = await generate(model, PROMPT, {
        backend: 'emulated',
        temperature: 0,
        maxTokens,
        contextSize: 256,
        onTextChunk: (text) => void process.stdout.write(text),
      });
      const same = onGpu.tokens.join() === onCpu.tokens.join();
      console.log(
        `\n[${onGpu.tokens.length} tokens, ${onGpu.chained ? 'chained' : 'not chained'}, ` +
          `${same ? 'the same tokens as the CPU' : 'NOT the same tokens as the CPU'}]`,
      );
      if (!same) process.exitCode = 1;
    } catch (error) {
      if (!(error instanceof BackendUnavailableError)) throw error;
      console.log(`emulated GPU: not run. ${error.message}`);
    }
  } finally {
    model.dispose();
  }
}
