// pull-command.ts: `metal-decode pull URL|hf:user/repo/file.gguf`: a model
// downloaded into the models directory (resumed when a download was cut,
// checked against the hub's SHA-256), its path printed.
import cliProgress from 'cli-progress';

import { defaultModelsDirectory, modelSource, resolveModelFile } from '../models/resolve-model-file.js';
import { UsageError } from './bench-args.js';
import { parseCommandArgs } from './command-args.js';
import type { Output } from './output.js';

export const PULL_USAGE = `Usage: metal-decode pull URL|hf:user/repo/file.gguf [--dir DIR]

Downloads a model into the models directory and prints its path. A cut
download resumes where it stopped; the file is checked against the SHA-256
the hub sends (Hugging Face's X-Linked-ETag) before it takes its name, and a
file already there is not downloaded again. hf: files come from
huggingface.co, or from HF_ENDPOINT when it is set.

  --dir DIR   the models directory (default: METAL_DECODE_MODELS, else ~/.metal-decode/models;
              now ${defaultModelsDirectory()})
  -h, --help  this text`;

export async function pullCommand(argv: string[], stdout: Output, stderr: Output): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, { dir: { type: 'string' } }, 1);
  if (values.help) return (void stdout.write(`${PULL_USAGE}\n`), 0);
  const uri = positionals[0];
  if (uri === undefined) throw new UsageError('the model to pull (a URL or hf:user/repo/file.gguf) is required');
  if (modelSource(uri) === undefined) throw new UsageError(`${JSON.stringify(uri)} is not a URL or hf:user/repo/file.gguf`);
  const bar =
    stderr.isTTY === true
      ? new cliProgress.SingleBar(
          { format: '{bar} {percentage}% {value}/{total} bytes', stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  let started = false,
    lastPercent = -1;
  const path = await resolveModelFile(uri, {
    ...(typeof values.dir === 'string' && { directory: values.dir }),
    onProgress: ({ downloaded, total }) => {
      if (bar) {
        if (!started) bar.start(total ?? 0, downloaded);
        bar.update(downloaded);
      } else {
        const percent = total ? Math.floor((downloaded / total) * 100) : 0;
        if (!started) stderr.write(`downloading ${uri}${downloaded > 0 ? ` (resuming at ${downloaded} bytes)` : ''}\n`);
        if (total && percent >= lastPercent + 25) stderr.write(`${percent}%\n`);
        if (total) lastPercent = Math.max(lastPercent, percent - (percent % 25));
      }
      started = true;
    },
  }).finally(() => bar?.stop());
  stdout.write(`${path}\n`);
  return 0;
}
