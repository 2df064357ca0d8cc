// main.ts: the `metal-decode` command: the subcommands, --version, and
// help per command. A usage error prints what was wrong and where the help
// is (exit code 2); a failure prints its message (exit code 1).
import { existsSync, readFileSync } from 'node:fs';

import { UsageError } from './bench-args.js';
import { benchCommand } from './bench-command.js';
import { CHAT_USAGE, chatCommand } from './chat-command.js';
import { COMPLETE_USAGE, completeCommand } from './complete-command.js';
import { INSPECT_USAGE, inspectCommand } from './inspect-command.js';
import type { Output } from './output.js';
import { PULL_USAGE, pullCommand } from './pull-command.js';
import { SERVE_USAGE, serveCommand } from './serve-command.js';

export type { Output } from './output.js';

const USAGE = `Usage: metal-decode <command> [options]

Commands:
  chat      talk to a model in the terminal (metal-decode chat --model FILE)
  complete  the model's continuation of a text
  serve     an OpenAI-compatible HTTP server over a model (/v1/chat/completions, ...)
  pull      download a model (a URL or hf:user/repo/file.gguf) into the models directory
  inspect   what a GGUF file holds and what would run it here
  bench     measure the samplers, the decode loop, GGUF models and their tokenizers here

Run metal-decode <command> --help for a command's options; --version for the version.`;

type Command = (argv: string[], stdout: Output, stderr: Output, input: NodeJS.ReadableStream) => Promise<number>;

const COMMANDS: Record<string, { run: Command; usage?: string }> = {
  chat: { run: chatCommand, usage: CHAT_USAGE },
  complete: { run: completeCommand, usage: COMPLETE_USAGE },
  serve: { run: serveCommand, usage: SERVE_USAGE },
  pull: { run: pullCommand, usage: PULL_USAGE },
  inspect: { run: inspectCommand, usage: INSPECT_USAGE },
  bench: { run: benchCommand },
};

/** The package's version, from its package.json. */
export function packageVersion(): string {
  // lib/cli/ in the sources, dist/lib/cli/ built: the first package.json up is the package's.
  for (const up of ['../../package.json', '../../../package.json']) {
    const url = new URL(up, import.meta.url);
    if (existsSync(url)) return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
  }
  throw new Error("metal-decode's package.json was not found");
}

/** Runs the command line `argv` (without node and the script); resolves to the exit code. */
export async function main(
  argv: string[],
  stdout: Output = process.stdout,
  stderr: Output = process.stderr,
  input: NodeJS.ReadableStream = process.stdin,
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic !== undefined && COMMANDS[topic] !== undefined) return COMMANDS[topic].run(['--help'], stdout, stderr, input);
    stdout.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    stderr.write(`metal-decode: unknown command ${JSON.stringify(name)} (the commands are ${Object.keys(COMMANDS).join(', ')})\n\n${USAGE}\n`);
    return 2;
  }
  try {
    return await command.run(rest, stdout, stderr, input);
  } catch (error) {
    if (error instanceof UsageError) {
      stderr.write(`metal-decode ${name}: ${error.message}\n\nRun metal-decode ${name} --help for the options.\n`);
      return 2;
    }
    stderr.write(`metal-decode ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
