// chat-command.ts: `metal-decode chat --model F`: a conversation in the
// terminal (or over a pipe): each line is a message, the reply streams as
// it is generated. A line ending with \ goes on to the next; a block
// between two """ lines is one message. /reset, /stats, /exit; Ctrl-C
// stops a reply, and exits when no reply runs.
import { createInterface } from 'node:readline';

import { ChatSession } from '../chat/chat-session.js';
import { parseCommandArgs } from './command-args.js';
import { MODEL_OPTIONS, MODEL_OPTIONS_USAGE, modelOptions } from './model-options.js';
import type { Output } from './output.js';

export const CHAT_USAGE = `Usage: metal-decode chat --model FILE [options]

A conversation with the model, with its own chat template. Type a message
and press Enter; end a line with \\ to go on to the next, or put a block
between two lines of """. The reply streams as it is generated (a
reasoning model's thinking is shown dimmed).

  /reset   forget the conversation (the system prompt stays)
  /stats   show or stop showing tokens/s after each reply
  /exit    leave (or Ctrl-D); Ctrl-C stops a reply, or leaves when none runs

Options:
${MODEL_OPTIONS_USAGE}
  --system TEXT       the system prompt
  --stats             show tokens/s after each reply
  -h, --help          this text`;

export async function chatCommand(argv: string[], stdout: Output, stderr: Output, input: NodeJS.ReadableStream): Promise<number> {
  const { values } = parseCommandArgs(argv, { ...MODEL_OPTIONS, system: { type: 'string' }, stats: { type: 'boolean' } });
  if (values.help) return (void stdout.write(`${CHAT_USAGE}\n`), 0);
  const { model, backend, contextSize, sampling } = await modelOptions(values, stderr);
  const chat = new ChatSession(model, { backend, contextSize, ...(typeof values.system === 'string' && { systemPrompt: values.system }) });
  const tty = stdout.isTTY === true;
  let stats = values.stats === true;
  stderr.write(
    `${model.info.architecture} on ${chat.session.backend}, context ${chat.session.contextSize} (${chat.session.contextSizeReason}); /exit to leave\n`,
  );
  const lines = createInterface({ input, terminal: tty && (input as { isTTY?: boolean }).isTTY === true, crlfDelay: Infinity });
  let replying: AbortController | undefined;
  let closed = false;
  lines.on('SIGINT', () => {
    if (replying) replying.abort();
    else lines.close();
  });
  // The input's end (Ctrl-D, or a pipe's last line read) ends the session after the lines already read.
  lines.on('close', () => (closed = true));
  const prompt = (text: string) => tty && stdout.write(text);
  const pending: string[] = [];
  let block: string[] | undefined;
  let continued: string[] = [];
  try {
    prompt('> ');
    for await (const line of lines) {
      // A message: a line, lines joined by a trailing \, or a """ block.
      if (block !== undefined) {
        if (line.trim() === '"""') {
          pending.push(block.join('\n'));
          block = undefined;
        } else block.push(line);
      } else if (line.trim() === '"""') block = [];
      else if (line.endsWith('\\')) continued.push(line.slice(0, -1));
      else {
        pending.push([...continued, line].join('\n'));
        continued = [];
      }
      if (block !== undefined || continued.length > 0) {
        prompt('. ');
        continue;
      }
      const message = pending.shift()!;
      const command = message.trim();
      if (command === '/exit') break;
      if (command === '/reset') {
        chat.resetChatHistory();
        stdout.write('(the conversation was reset)\n');
      } else if (command === '/stats') {
        stats = !stats;
        stdout.write(`(stats ${stats ? 'on' : 'off'})\n`);
      } else if (command !== '') {
        replying = new AbortController();
        let thinking = false;
        const reply = await chat.promptWithMeta(message, {
          ...sampling,
          signal: replying.signal,
          stopOnAbortSignal: true,
          onResponseChunk: (chunk) => {
            const thought = chunk.type === 'segment';
            if (thought !== thinking && tty) stdout.write(thought ? '\x1b[2m' : '\x1b[0m');
            thinking = thought;
            stdout.write(chunk.text);
          },
        });
        if (thinking && tty) stdout.write('\x1b[0m');
        replying = undefined;
        stdout.write('\n');
        if (reply.stopReason === 'abort') stdout.write('(stopped)\n');
        if (stats) {
          const s = reply.result.stats;
          stdout.write(
            `(${s.generatedTokens} tokens, ${s.decodeTokensPerSecond.toFixed(1)} tokens/s; prompt ${s.promptTokens} tokens in ${s.prefillMs.toFixed(0)} ms)\n`,
          );
        }
      }
      if (closed && pending.length === 0 && tty) break;
      prompt('> ');
    }
  } finally {
    lines.close();
    await chat[Symbol.asyncDispose]();
    model.dispose();
  }
  return 0;
}
