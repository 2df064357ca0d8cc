// llama-cpp-template.ts: llama.cpp's chat template engine as an oracle.
// node-llama-cpp does not expose llama_chat_apply_template, so a small C
// program (llama-cpp-template.c, built here with the system's C compiler)
// loads its prebuilt libllama and calls it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { ChatMessage } from '../../lib/tokenizers/chat-template.js';

function libllama(): string {
  const require = createRequire(import.meta.url);
  const bins = join(dirname(require.resolve('@node-llama-cpp/linux-x64')), '..', 'bins', 'linux-x64');
  const name = readdirSync(bins).find((f) => /^libllama(\.v[\d.]+)?\.so$/.test(f));
  if (name === undefined) throw new Error(`no libllama in ${bins}`);
  return join(bins, name);
}

let program: string | undefined;

/** llama.cpp's rendering of `messages` with `template`, or undefined when it does not recognise the template. */
export function llamaCppRender(template: string, messages: readonly ChatMessage[], addAssistant: boolean): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'md-template-'));
  if (program === undefined) {
    const source = join(dirname(fileURLToPath(import.meta.url)), 'llama-cpp-template.c');
    program = join(dir, 'llama-cpp-template');
    // The .c file sits next to this one in test/gguf (the compiled test helpers live in dist/test/gguf).
    execFileSync('cc', ['-O1', '-o', program, source.replace(/dist\/test\/gguf/, 'test/gguf'), '-ldl']);
  }
  const templateFile = join(dir, 'template.jinja');
  writeFileSync(templateFile, template);
  const input = Buffer.concat(messages.flatMap((m) => [Buffer.from(`${m.role}\0`), Buffer.from(`${m.content}\0`)]));
  const lib = libllama();
  try {
    return execFileSync(program, [lib, templateFile, addAssistant ? '1' : '0'], {
      input,
      env: { ...process.env, LD_LIBRARY_PATH: dirname(lib) },
    }).toString('utf8');
  } catch (error) {
    if ((error as { status?: number }).status === 3) return undefined;
    throw error;
  }
}
