// cli-commands.test.ts: the metal-decode command line beyond bench: chat
// (over a pipe, and in a pseudo-terminal made by util-linux's script),
// complete, pull (from a loopback HTTP server that serves ranges: a cut
// download resumes, the SHA-256 the server sends is checked, hf: names go
// to HF_ENDPOINT), inspect, --version, help per command, and unknown
// commands and options named.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { packageVersion } from '../lib/cli/main.js';
import { resolveModelFile } from '../lib/models/resolve-model-file.js';
import { chatModelFile } from './chat-model.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { ROOT, runCli } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'md-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let modelPath: string;
beforeAll(async () => {
  modelPath = await chatModelFile(dir, 'qwen3', 'qwen3');
});

const BIN = join(ROOT, 'bin/metal-decode.js');
const run = (args: string[], input: string, command = process.execPath) =>
  spawnSync(command, args, { input, encoding: 'utf8', timeout: 120_000, env: { ...process.env, NO_COLOR: '1' } });

describe('the command', () => {
  test('--version, help per command, unknown commands and options named', async () => {
    expect(await runCli('--version')).toEqual({ code: 0, stdout: `${packageVersion()}\n`, stderr: '' });
    expect(packageVersion()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    const unknown = await runCli('chta');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^metal-decode: unknown command "chta" \(the commands are chat, complete, serve, pull, inspect, bench\)/);
    for (const command of ['chat', 'complete', 'serve', 'pull', 'inspect']) {
      const help = await runCli(command, '--help');
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: metal-decode ${command} `));
      expect((await runCli('help', command)).stdout).toBe(help.stdout);
    }
    // Each bench subcommand's help is its own, not the whole bench text.
    const model = await runCli('bench', 'model', '--help');
    expect(model.stdout).toMatch(/^Usage: metal-decode bench model --model FILE/);
    expect(model.stdout).not.toContain('tokenizer a GGUF');
    expect((await runCli('bench', 'predict', '--help')).stdout).toMatch(/^Usage: metal-decode bench predict/);
    expect(await runCli('chat')).toMatchObject({
      code: 2,
      stderr: 'metal-decode chat: --model is required\n\nRun metal-decode chat --help for the options.\n',
    });
    expect((await runCli('chat', '--model', modelPath, '--temprature', '1')).stderr).toMatch(/^metal-decode chat: Unknown option '--temprature'/);
    expect((await runCli('chat', '--model', modelPath, '--max-tokens=-3')).stderr).toMatch(
      /^metal-decode chat: --max-tokens: expected an integer from 0 to 16777216, got "-3"/,
    );
    expect((await runCli('chat', '--model', join(dir, 'missing.gguf'))).stderr).toMatch(
      /^metal-decode chat: Expected a file that exists, an http\(s\) URL or hf:user\/repo\/file.gguf for uri/,
    );
  });

  test('inspect: the shape, the tokenizer, the tensors by type, and what runs here', async () => {
    const text = await runCli('inspect', modelPath);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/model: +qwen3 .*: 2 layers, d 64, 2 heads \(1 KV\) of 32, FFN 128/);
    expect(text.stdout).toMatch(/context: +trained 4096; 'auto' here: 4096/);
    expect(text.stdout).toMatch(/Q8_0 +\d+ tensors/);
    expect(text.stdout).toMatch(/native +runs here/);
    expect(text.stdout).toMatch(/js +not here: a GGUF model's forward pass is native code/);
    const json = JSON.parse((await runCli('inspect', modelPath, '--json')).stdout);
    expect(json).toMatchObject({ architecture: 'qwen3', chatTemplate: true, trainedContextLength: 4096, autoContext: { contextSize: 4096 } });
    expect(json.tokenizer.vocabulary).toBe(151_669);
  });

  test('inspect: a mixture-of-experts file, its experts, and every native backend', async () => {
    const path = join(dir, 'qwen3moe.gguf');
    await writeRandomModel(path, variantSpec('qwen3moe', 'Q8_0'));
    const json = JSON.parse((await runCli('inspect', path, '--json')).stdout);
    expect(json.config).toMatchObject({ expertCount: 8, expertUsedCount: 2 });
    const backends = Object.fromEntries(json.backends.map((b: { name: string }) => [b.name, b]));
    expect(backends.native.available).toBe(true);
    expect(backends.emulated).toEqual({ name: 'emulated', available: true });
  });

  test('complete: the continuation of a prompt, streamed', async () => {
    const out = await runCli('complete', '--model', modelPath, '--prompt', 'Once upon a time', '--max-tokens', '6', '--temperature', '0', '--stats');
    expect(out.code).toBe(0);
    expect(out.stdout.length).toBeGreaterThan(1);
    expect(out.stderr).toMatch(/\(6 tokens, [\d.]+ tokens\/s; prompt 4 tokens in \d+ ms; maxTokens\)/);
  });
});

describe('chat', () => {
  const args = [BIN, 'chat', '--model', '', '--max-tokens', '4', '--temperature', '0', '--system', 'Be brief.'];
  test('over a pipe: each line a message, \\ and """ for several lines, /stats, /reset, /exit', () => {
    args[3] = modelPath;
    const out = run(args, 'Hello\nfirst line \\\nsecond line\n/stats\n"""\nblock one\nblock two\n"""\n/reset\nAgain\n/exit\nnever sent\n');
    expect(out.status).toBe(0);
    expect(out.stderr).toMatch(/^qwen3 on native, context 4096 \(auto: the trained context length 4096/);
    const lines = out.stdout.split('\n');
    expect(lines).toContain('(stats on)');
    expect(lines).toContain('(the conversation was reset)');
    // Replies: Hello, the two joined lines, the block, Again; stats after the last two.
    expect(lines.filter((l) => /^\(4 tokens, [\d.]+ tokens\/s; prompt \d+ tokens in \d+ ms\)$/.test(l))).toHaveLength(2);
    expect(out.stdout).not.toContain('never sent');
  });

  test('in a pseudo-terminal: the prompt, the streamed reply, Ctrl-D leaves', async () => {
    expect(existsSync('/usr/bin/script'), "util-linux's script (/usr/bin/script) gives chat its pseudo-terminal: install util-linux").toBe(true);
    args[3] = modelPath;
    const command = ['node', ...args.slice(0, 1), ...args.slice(1).map((a) => JSON.stringify(a)), '--stats'].join(' ');
    const child = spawn('/usr/bin/script', ['-qfec', command, '/dev/null'], { env: { ...process.env, NO_COLOR: '1' } });
    // Each key goes in once chat waits for it at its prompt, as a person types: bytes that reach the
    // terminal before chat puts it in raw mode meet the terminal's own line editing, which swallows a Ctrl-D.
    let stdout = '';
    let typed = 0;
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString('utf8');
      const afterReply = stdout.slice(Math.max(0, stdout.search(/\(4 tokens/)));
      if (typed === 0 && stdout.includes('> ')) {
        typed = 1;
        child.stdin.write('Hello\n');
      } else if (typed === 1 && /\(4 tokens/.test(stdout) && afterReply.includes('> ')) {
        typed = 2;
        child.stdin.write('\u0004');
      }
    });
    const killer = setTimeout(() => child.kill(), 100_000);
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(killer);
    expect([status, typed]).toEqual([0, 2]);
    // The prompt (on a terminal only), the reply to its end (its stats line), and Ctrl-D leaving; the banner is on standard error, which the terminal merges anywhere.
    expect(stdout).toContain('> ');
    expect(stdout).toMatch(/\(4 tokens, [\d.]+ tokens\/s; prompt \d+ tokens in \d+ ms\)/);
    expect(stdout).toContain('/exit to leave');
  }, 120_000);
});

describe('pull and resolveModelFile', () => {
  const content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 8)) & 255));
  const sha256 = createHash('sha256').update(content).digest('hex');
  let server: Server;
  let base: string;
  const seen: { path: string; range?: string }[] = [];
  let cutAt: number | undefined; // the next full response stops after this many bytes
  let wrongHash = false;
  beforeAll(async () => {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      seen.push({ path: request.url!, ...(request.headers.range && { range: request.headers.range }) });
      if (request.url!.startsWith('/user/repo/resolve/main/')) {
        // Hugging Face: a redirect to the storage, with the SHA-256 as X-Linked-ETag.
        response.writeHead(302, { location: '/storage/model.gguf', 'x-linked-etag': `"${wrongHash ? '0'.repeat(64) : sha256}"` });
        return void response.end();
      }
      const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
      const start = range ? Number(range[1]) : 0;
      const body = content.subarray(start);
      response.writeHead(range ? 206 : 200, { 'content-length': body.length, ...(request.url === '/plain.gguf' && { etag: `"${sha256}"` }) });
      if (cutAt !== undefined) {
        response.write(body.subarray(0, cutAt));
        cutAt = undefined;
        setTimeout(() => response.destroy(), 50);
        return;
      }
      response.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  test('a cut download resumes with a range request, is checked against the ETag, and is not downloaded again', async () => {
    const models = join(dir, 'models-1');
    seen.length = 0;
    cutAt = 100_000;
    const first = await runCli('pull', `${base}/plain.gguf`, '--dir', models);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/\nmetal-decode pull: Downloading .*plain\.gguf (failed after|ended at) 100000 (bytes|of 300000 bytes)/);
    expect(existsSync(join(models, 'plain.gguf.partial'))).toBe(true);
    expect(existsSync(join(models, 'plain.gguf'))).toBe(false);
    const second = await runCli('pull', `${base}/plain.gguf`, '--dir', models);
    expect(second).toMatchObject({ code: 0, stdout: `${join(models, 'plain.gguf')}\n` });
    expect(second.stderr).toContain('resuming at 100000 bytes');
    expect(seen.map((s) => s.range)).toEqual([undefined, 'bytes=100000-']);
    expect(readFileSync(join(models, 'plain.gguf')).equals(content)).toBe(true);
    // Already there: no request.
    expect(await resolveModelFile(`${base}/plain.gguf`, { directory: models })).toBe(join(models, 'plain.gguf'));
    expect(seen).toHaveLength(2);
  });

  test('hf:user/repo/file.gguf from HF_ENDPOINT, following the redirect, checked against its X-Linked-ETag; a wrong hash deletes the file', async () => {
    const models = join(dir, 'models-2');
    const previous = process.env.HF_ENDPOINT;
    process.env.HF_ENDPOINT = base;
    try {
      seen.length = 0;
      const progress: number[] = [];
      const path = await resolveModelFile('hf:user/repo/sub/model.gguf', {
        directory: models,
        onProgress: ({ downloaded }) => progress.push(downloaded),
      });
      expect(path).toBe(join(models, 'hf_user_repo_sub_model.gguf'));
      expect(seen.map((s) => s.path)).toEqual(['/user/repo/resolve/main/sub/model.gguf', '/storage/model.gguf']);
      expect(readFileSync(path).equals(content)).toBe(true);
      expect(progress.at(-1)).toBe(content.length);
      wrongHash = true;
      await expect(resolveModelFile('hf:user/repo/other.gguf', { directory: models })).rejects.toThrow(
        `the file's SHA-256 is ${sha256}, and the server said ${'0'.repeat(64)}; it was deleted`,
      );
      expect(existsSync(join(models, 'hf_user_repo_other.gguf.partial'))).toBe(false);
      expect(existsSync(join(models, 'hf_user_repo_other.gguf'))).toBe(false);
    } finally {
      wrongHash = false;
      if (previous === undefined) delete process.env.HF_ENDPOINT;
      else process.env.HF_ENDPOINT = previous;
    }
  });

  test('bad names are errors naming them', async () => {
    await expect(resolveModelFile('hf:user/model.gguf')).rejects.toThrow(
      'Expected hf:user/repo/file.gguf (the file may be in folders of the repo) for uri but received "hf:user/model.gguf"',
    );
    expect(await runCli('pull', 'model.gguf')).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^metal-decode pull: "model.gguf" is not a URL or hf:user\/repo\/file.gguf/),
    });
    const local = join(dir, 'local.gguf');
    writeFileSync(local, 'x');
    expect(await resolveModelFile(local)).toBe(local);
  });
});
