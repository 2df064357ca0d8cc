// complete-command.ts: `metal-decode complete --model F`: the text the
// model writes after a prompt (no chat template), streamed.
import { generate } from '../generate/session.js';
import { UsageError } from './bench-args.js';
import { parseCommandArgs } from './command-args.js';
import { MODEL_OPTIONS, MODEL_OPTIONS_USAGE, modelOptions } from './model-options.js';
import type { Output } from './output.js';

export const COMPLETE_USAGE = `Usage: metal-decode complete --model FILE --prompt TEXT [options]
       echo TEXT | metal-decode complete --model FILE [options]

The model's continuation of a text, without a chat template, streamed as it
is generated (--max-tokens 256 unless given).

Options:
${MODEL_OPTIONS_USAGE}
  --prompt TEXT       the text to continue (default: standard input)
  --stats             show tokens/s at the end
  -h, --help          this text`;

export async function completeCommand(argv: string[], stdout: Output, stderr: Output, input: NodeJS.ReadableStream): Promise<number> {
  const { values } = parseCommandArgs(argv, { ...MODEL_OPTIONS, prompt: { type: 'string' }, stats: { type: 'boolean' } });
  if (values.help) return (void stdout.write(`${COMPLETE_USAGE}\n`), 0);
  let prompt = values.prompt;
  if (typeof prompt !== 'string') {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(Buffer.from(chunk as Buffer));
    prompt = Buffer.concat(chunks).toString('utf8');
  }
  if (prompt === '') throw new UsageError('the prompt is empty: give --prompt TEXT or text on standard input');
  const { model, backend, contextSize, sampling } = await modelOptions(values, stderr);
  try {
    const result = await generate(model, prompt, {
      maxTokens: 256,
      ...sampling,
      backend,
      contextSize,
      onTextChunk: (text) => void stdout.write(text),
    });
    stdout.write('\n');
    if (values.stats) {
      const s = result.stats;
      stderr.write(
        `(${s.generatedTokens} tokens, ${s.decodeTokensPerSecond.toFixed(1)} tokens/s; prompt ${s.promptTokens} tokens in ${s.prefillMs.toFixed(0)} ms; ${result.stopReason})\n`,
      );
    }
  } finally {
    model.dispose();
  }
  return 0;
}
