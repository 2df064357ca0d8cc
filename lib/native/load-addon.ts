// load-addon.ts: finds and loads the compiled addon, once.
//
// When it cannot, the failure lists every place it looked, what went wrong
// there and how to fix it; getBackends() reports that as the reason the
// native backend is unavailable.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ADDON_ABI_VERSION, type NativeAddon } from './contract.js';

export interface AddonAttempt {
  path: string;
  error: string;
  fix: string;
}

export type AddonLoadResult =
  | { ok: true; addon: NativeAddon; path: string }
  /** `deliberate`: the user turned the addon off (an environment variable), so its absence is no surprise. */
  | { ok: false; attempts: AddonAttempt[]; reason: string; deliberate: boolean };

const REBUILD_FIX = 'rebuild it with `npm rebuild metal-decode` (needs python3, make and a C++17 compiler; on macOS the Xcode Command Line Tools)';

/** The folder holding this package's package.json (works from lib/ and from dist/lib/). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'metal-decode') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('metal-decode: cannot find the package root from ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

function candidatePaths(root: string): string[] {
  const fromEnv = process.env.METAL_DECODE_ADDON;
  const built = ['build/Release', 'build/Debug'].map((d) => join(root, d, 'metal_decode.node'));
  return fromEnv ? [fromEnv, ...built] : built;
}

function tryLoad(path: string): { addon?: NativeAddon; attempt?: AddonAttempt } {
  if (!existsSync(path)) return { attempt: { path, error: 'not found', fix: REBUILD_FIX } };
  try {
    const addon = createRequire(import.meta.url)(path) as NativeAddon;
    if (addon.abiVersion !== ADDON_ABI_VERSION) {
      return { attempt: { path, error: `built for addon ABI ${addon.abiVersion}, this package needs ${ADDON_ABI_VERSION}`, fix: REBUILD_FIX } };
    }
    return { addon };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      attempt: { path, error: message, fix: `${REBUILD_FIX}; if it was built for another Node.js version or platform, a rebuild also fixes that` },
    };
  }
}

let cached: AddonLoadResult | undefined;

export function loadAddon(): AddonLoadResult {
  if (cached) return cached;
  if (process.env.METAL_DECODE_DISABLE_NATIVE === '1') {
    cached = { ok: false, attempts: [], reason: 'disabled by METAL_DECODE_DISABLE_NATIVE=1', deliberate: true };
    return cached;
  }
  const root = packageRoot();
  cached = loadAddonFrom(candidatePaths(root));
  if (!cached.ok) {
    // Written by scripts/build-addon.mjs when a METAL_DECODE_JS_ONLY=1 install could not build the addon.
    const marker = join(root, 'build', 'js-only-install.txt');
    if (existsSync(marker)) {
      const failure = readFileSync(marker, 'utf8').trim();
      cached = {
        ok: false,
        attempts: cached.attempts,
        reason: `installed JavaScript-only (METAL_DECODE_JS_ONLY=1) after the addon build failed (${failure}); ${REBUILD_FIX}`,
        deliberate: true,
      };
    }
  }
  return cached;
}

/** Loads the first of `paths` that works, or says what went wrong with each. */
export function loadAddonFrom(paths: string[]): AddonLoadResult {
  const attempts: AddonAttempt[] = [];
  for (const path of paths) {
    const { addon, attempt } = tryLoad(path);
    if (addon) return { ok: true, addon, path };
    attempts.push(attempt!);
  }
  const lines = attempts.map((a) => `  - ${a.path}: ${a.error}; ${a.fix}`);
  return { ok: false, attempts, reason: `the native addon could not be loaded. Tried:\n${lines.join('\n')}`, deliberate: false };
}
