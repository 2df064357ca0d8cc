// serve-command.ts: `metal-decode serve --model F`: the OpenAI-compatible
// HTTP server (lib/server/) over one model, until Ctrl-C or SIGTERM.
import { createServer } from '../server/openai-server.js';
import { parseCommandArgs, numberOption } from './command-args.js';
import { MODEL_OPTIONS, MODEL_OPTIONS_USAGE, modelOptions } from './model-options.js';
import type { Output } from './output.js';

export const SERVE_USAGE = `Usage: metal-decode serve --model FILE [options]

OpenAI's HTTP API over the model: POST /v1/chat/completions (streamed as
server-sent events with "stream": true), /v1/completions, /v1/embeddings;
GET /v1/models and /health. --parallel requests run at once, their decode
steps in shared forward passes; a client that disconnects stops its
request. docs/serve.md has every field.

Options:
${MODEL_OPTIONS_USAGE.split('\n')
  .filter((line) => !/--temperature|--top-k|--max-tokens/.test(line))
  .join('\n')}
  --host HOST         where to listen (default 127.0.0.1: this machine only)
  --port N            default 8080; 0 picks a free one
  --api-key KEY       require Authorization: Bearer KEY on /v1 (also MD_API_KEY)
  --parallel N        requests that run at once, their decode steps batched; the context
                      is shared out among them (default 4)
  --max-queue N       requests that may wait while those run (default 16; past it: 429)
  --body-limit BYTES  the largest request body (default 4194304; past it: 413)
  --name NAME         the model's id in /v1/models and replies (default: the file's name)
  -h, --help          this text`;

// The model's options but the sampling: each request brings its own.
const SAMPLING_FLAGS = ['temperature', 'top-k', 'top-p', 'min-p', 'seed', 'max-tokens'];
const SERVE_OPTIONS = {
  ...Object.fromEntries(Object.entries(MODEL_OPTIONS).filter(([name]) => !SAMPLING_FLAGS.includes(name))),
  host: { type: 'string' },
  port: { type: 'string' },
  'api-key': { type: 'string' },
  parallel: { type: 'string' },
  'max-queue': { type: 'string' },
  'body-limit': { type: 'string' },
  name: { type: 'string' },
} as const;

export async function serveCommand(argv: string[], stdout: Output, stderr: Output): Promise<number> {
  const { values } = parseCommandArgs(argv, SERVE_OPTIONS);
  if (values.help) return (void stdout.write(`${SERVE_USAGE}\n`), 0);
  const port = numberOption(values, 'port', 0, 65535);
  const parallel = numberOption(values, 'parallel', 1, 64);
  const maxQueue = numberOption(values, 'max-queue', 0, 1_000_000);
  const bodyLimit = numberOption(values, 'body-limit', 1024, 1 << 30);
  const apiKey = (values['api-key'] as string | undefined) ?? process.env.MD_API_KEY;
  const { model, backend, contextSize } = await modelOptions(values, stderr);
  const server = createServer(model, {
    backend,
    contextSize,
    ...(typeof values.host === 'string' && { host: values.host }),
    ...(port !== undefined && { port }),
    ...(apiKey !== undefined && apiKey !== '' && { apiKey }),
    ...(parallel !== undefined && { parallel }),
    ...(maxQueue !== undefined && { maxQueue }),
    ...(bodyLimit !== undefined && { bodyLimit }),
    ...(typeof values.name === 'string' && { modelName: values.name }),
  });
  try {
    const { url } = await server.listen();
    stdout.write(`metal-decode serve: ${server.modelName} (${model.info.architecture}) at ${url}/v1${apiKey ? ' (API key required)' : ''}\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    stderr.write('metal-decode serve: stopping\n');
  } finally {
    await server.close();
    model.dispose();
  }
  return 0;
}
