// The install step and a missing addon: a failed build is never silent.
//
// Each test works on a copy of the package in a temporary folder, so the
// build under test never touches this checkout's addon.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ROOT as root, runModule } from './helpers.js';

const nodeGyp =
  process.env.npm_config_node_gyp ??
  join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');

let copy: string;

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'md-install-'));
  for (const entry of ['package.json', 'binding.gyp', 'scripts', 'native', 'metal', 'dist']) {
    cpSync(join(root, entry), join(copy, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

/** The install script of the copy, with a C++ compiler that does not exist. */
function installWithoutCompiler(env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['scripts/build-addon.mjs'], {
    cwd: copy,
    encoding: 'utf8',
    env: { ...process.env, npm_config_node_gyp: nodeGyp, CXX: '/nonexistent/c++', CC: '/nonexistent/cc', ...env },
  });
}

/** Runs `code` (an ES module) against the copy's package; returns its stdout as JSON and its stderr. */
function runInCopy(code: string): { out: unknown; stderr: string } {
  const result = runModule(code, { cwd: copy });
  if (result.status !== 0) throw new Error(result.stderr);
  return { out: JSON.parse(result.stdout), stderr: result.stderr };
}

const marker = () => join(copy, 'build', 'js-only-install.txt');

describe('install', () => {
  it('a failed addon build fails the install with the first errors and what to install', () => {
    const result = installWithoutCompiler();
    expect(result.status).toBe(1);
    const lines = result.stderr.split('\n');
    const report = lines.slice(lines.indexOf('metal-decode: the native addon did not build (node-gyp exited with 1).'));
    expect(report[0]).toBe('metal-decode: the native addon did not build (node-gyp exited with 1).');
    expect(report[1]).toBe('First errors:');
    expect(report[2]).toMatch(/No such file|not found/);
    expect(report[2]).toMatch(/\/nonexistent\/(cc|c\+\+)/);
    const fix =
      process.platform === 'darwin'
        ? 'Fix: install the Xcode Command Line Tools (`xcode-select --install`), then `npm rebuild metal-decode`.'
        : 'Fix: install python3, make and a C++17 compiler (Debian/Ubuntu: `apt-get install python3 make g++`), then `npm rebuild metal-decode`.';
    expect(report).toContain(fix);
    expect(report).toContain('Or install without the addon (the js backend only): METAL_DECODE_JS_ONLY=1 npm install metal-decode');
    expect(existsSync(marker())).toBe(false);
  });

  it('METAL_DECODE_JS_ONLY=1 turns the failure into a warning, and the loader says why native is missing', () => {
    const result = installWithoutCompiler({ METAL_DECODE_JS_ONLY: '1' });
    expect(result.status).toBe(0);
    expect(result.stderr).toContain('METAL_DECODE_JS_ONLY=1: installed with the js backend only.');
    expect(readFileSync(marker(), 'utf8')).toMatch(/^node-gyp exited with 1: .*\/nonexistent\/(cc|c\+\+)/);

    const { out, stderr } = runInCopy(`
      import { getBackends, selectBackend } from './dist/lib/index.js';
      console.log(JSON.stringify({ native: getBackends()[2], auto: selectBackend('auto') }));`);
    const { native, auto } = out as { native: { available: boolean; reason: string }; auto: string };
    expect(native.available).toBe(false);
    expect(native.reason).toMatch(
      /^installed JavaScript-only \(METAL_DECODE_JS_ONLY=1\) after the addon build failed \(node-gyp exited with 1: .*\); rebuild it with `npm rebuild metal-decode`/,
    );
    expect(auto).toBe('js');
    // Chosen on purpose: no warning.
    expect(stderr).not.toContain('METAL_DECODE_NO_ADDON');
  });

  it("the first 'auto' choice that lands on js because the addon is missing warns once, with the reason", () => {
    rmSync(marker(), { force: true });
    const { out, stderr } = runInCopy(`
      import { sample, selectBackend, generate, LogitsModel } from './dist/lib/index.js';
      const picks = [selectBackend('auto'), selectBackend('auto')];
      const token = sample(new Float32Array([0, 3, 1]));
      const model = new LogitsModel({ vocabSize: 3, logits: () => new Float32Array([0, 3, 1]) });
      const result = await generate(model, [0], { maxTokens: 2 });
      console.log(JSON.stringify({ picks, token, backend: result.backend }));`);
    expect(out).toEqual({ picks: ['js', 'js'], token: 1, backend: 'js' });
    const warnings = stderr.split('\n').filter((line) => line.includes('[METAL_DECODE_NO_ADDON]'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /Warning: backend 'auto' runs on 'js', the TypeScript sampler \(10-100x slower than 'native'\), because the native addon could not be loaded\. Tried:$/,
    );
    expect(stderr).toMatch(/build\/Release\/metal_decode\.node: not found; rebuild it with `npm rebuild metal-decode`/);
  });
});
