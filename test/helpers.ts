// helpers.ts: shared pieces of the vitest suites.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { main } from '../lib/cli/main.js';
import { getBackends, toFloat16Array, type BackendName } from '../lib/index.js';

/** The CPU backends every behavioural test runs on; native must have built (the test command builds it). */
export const BACKENDS = ['native', 'js'] as const;

/**
 * The backends that run the .metal kernels: 'emulated' always, and 'metal'
 * when METAL_DECODE_TEST_METAL=1 (on a Mac: the same suite on the GPU; the
 * tests then fail, not skip, if Metal cannot start).
 */
export const GPU_BACKENDS: ('emulated' | 'metal')[] = process.env.METAL_DECODE_TEST_METAL === '1' ? ['emulated', 'metal'] : ['emulated'];

export function requireNativeBuilt(): void {
  const native = getBackends().find((b) => b.name === 'native');
  if (!native?.available) throw new Error(`the native addon must be built for the tests: ${native?.reason}`);
}

export type Format = 'float32' | 'float16';
export const FORMATS: Format[] = ['float32', 'float16'];

/** Every (backend, format) pair a backend samples: the kernels read float16 rows. */
export const BACKEND_FORMATS: [BackendName, Format][] = [
  ...BACKENDS.flatMap((b) => FORMATS.map((f): [BackendName, Format] => [b, f])),
  ...GPU_BACKENDS.map((b): [BackendName, Format] => [b, 'float16']),
];

export function row(values: number[], format: Format): Float32Array | Uint16Array {
  return format === 'float16' ? toFloat16Array(values) : Float32Array.from(values);
}

/** The checkout's root: where the built package (dist/) is. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs an ES module snippet in a fresh Node process (by default in the
 * checkout, so './dist/lib/index.js' is the built package), with `env` added.
 */
export function runModule(code: string, options: { cwd?: string; env?: Record<string, string> } = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: options.cwd ?? ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
    timeout: 120_000,
  });
}

/** Runs the `metal-decode` command line in this process; resolves to its exit code and output. */
export async function runCli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { write: (t) => void (stdout += t) }, { write: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}
