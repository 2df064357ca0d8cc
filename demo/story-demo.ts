// story-demo.ts: `npm run demo -- --model FILE` (or METAL_DECODE_DEMO_MODEL=FILE):
// a story from a real GGUF model instead of the random-weight chat. It
// loads the file, continues "Once upon a time" greedily on the CPU,
// streamed, then runs the same on the emulated GPU tables and says whether
// the tokens are the same, or why those tables cannot run the model.
import { BackendUnavailableError, generate, loadModel } from '../lib/index.js';

const PROMPT = 'Once upon a time';

export async function tellStory(path: string, maxTokens = 120): Promise<void> {
  const model = await loadModel(path);
  try {
    const { info } = model;
    console.log(`\nloaded ${path}: ${info.architecture}, ${info.config.blockCount} layers, embedding ${info.config.embeddingLength}, ` +
      `${Object.entries(info.tensorTypes).map(([t, n]) => `${n} ${t}`).join(' + ')} tensors; CPU forward pass, ${info.cpuKernels} kernels, ${info.threads} threads`);
    process.stdout.write(`CPU (greedy): ${PROMPT}`);
    const onCpu = await generate(model, PROMPT, {
      backend: 'native', temperature: 0, maxTokens, onTextChunk: (text) => void process.stdout.write(text),
    });
    console.log(`\n[${onCpu.tokens.length} tokens, stopped by ${onCpu.stopReason}, ${onCpu.stats.decodeTokensPerSecond.toFixed(0)} tokens/s]`);
    try {
      const onGpu = await generate(model, PROMPT, { backend: 'emulated', temperature: 0, maxTokens, contextSize: 256 });
      const same = onGpu.tokens.join() === onCpu.tokens.join();
      console.log(`emulated GPU (greedy, ${onGpu.chained ? 'chained' : 'not chained'}): ${onGpu.tokens.length} tokens, ${same ? 'the same tokens as the CPU' : 'NOT the same tokens as the CPU'}`);
      if (!same) process.exitCode = 1;
    } catch (error) {
      if (!(error instanceof BackendUnavailableError)) throw error;
      console.log(`emulated GPU: not run. ${error.message}`);
    }
  } finally {
    model.dispose();
  }
}
