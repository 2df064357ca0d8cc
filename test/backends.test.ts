// Backend discovery and selection: no silent fallbacks.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { BackendUnavailableError, getBackends, sample, selectBackend } from '../lib/index.js';
import { loadAddonFrom } from '../lib/native/load-addon.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const root = fileURLToPath(new URL('..', import.meta.url));

/** Runs a snippet against the built package in a fresh process with `env`. */
function runIsolated(code: string, env: Record<string, string>): unknown {
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: root, env: { ...process.env, ...env }, encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout);
}

describe('backends', () => {
  it('lists native and js with availability and a reason', () => {
    const backends = getBackends();
    expect(backends.map((b) => b.name)).toEqual(['native', 'js']);
    for (const b of backends) {
      expect(b.available).toBe(true);
      expect(b.reason.length).toBeGreaterThan(10);
    }
    expect(backends[0].reason).toMatch(/metal_decode\.node/);
  });

  it("'auto' picks native when it loaded", () => {
    expect(selectBackend('auto')).toBe('native');
  });

  it('without the addon, auto runs js and an explicit native request fails with the reason', () => {
    const code = `
      import { getBackends, sample, selectBackend } from './dist/lib/index.js';
      let error;
      try { sample(new Float32Array([1, 2]), { backend: 'native' }); } catch (e) { error = { name: e.name, message: e.message, code: e.code }; }
      console.log(JSON.stringify({ backends: getBackends(), auto: selectBackend('auto'), autoToken: sample(new Float32Array([1, 2])), error }));`;
    const out = runIsolated(code, { METAL_DECODE_DISABLE_NATIVE: '1' }) as {
      backends: { name: string; available: boolean; reason: string }[]; auto: string; autoToken: number;
      error: { name: string; message: string; code: string };
    };
    expect(out.backends[0]).toEqual({ name: 'native', available: false, reason: 'disabled by METAL_DECODE_DISABLE_NATIVE=1' });
    expect(out.auto).toBe('js');
    expect(out.autoToken).toBe(1);
    expect(out.error).toEqual({
      name: 'BackendUnavailableError', code: 'ERR_MD_BACKEND_UNAVAILABLE',
      message: 'The native backend is not available: disabled by METAL_DECODE_DISABLE_NATIVE=1',
    });
  });

  it('a failed load lists every path it tried, what went wrong and how to fix it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'md-addon-'));
    const corrupt = join(dir, 'metal_decode.node');
    writeFileSync(corrupt, 'not a shared object');
    const result = loadAddonFrom([join(dir, 'missing.node'), corrupt]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.attempts.map((a) => a.path)).toEqual([join(dir, 'missing.node'), corrupt]);
    expect(result.attempts[0].error).toBe('not found');
    expect(result.attempts[1].error).toMatch(/invalid ELF header|not a mach-o file|file too short/i);
    for (const a of result.attempts) expect(a.fix).toMatch(/npm rebuild metal-decode/);
    expect(result.reason).toMatch(/^the native addon could not be loaded\. Tried:\n  - .*missing\.node: not found; rebuild it/);
  });

  it('native errors surface with the caller in the stack', () => {
    const error = (() => {
      try {
        sample(new Float32Array([1]), { backend: 'native', temperature: -1 });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(RangeError);
    expect(error?.stack).toMatch(/backends\.test\.ts/);
  });

  it('BackendUnavailableError carries the backend and the reason', () => {
    const e = new BackendUnavailableError('native', 'because');
    expect([e.backend, e.reason, e.message]).toEqual(['native', 'because', 'The native backend is not available: because']);
  });
});
