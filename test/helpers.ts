// helpers.ts: shared pieces of the vitest suites.
import { getBackends, toFloat16Array } from '../lib/index.js';

/** Backends every behavioural test runs on; native must have built (the test command builds it). */
export const BACKENDS = ['native', 'js'] as const;

export function requireNativeBuilt(): void {
  const native = getBackends().find((b) => b.name === 'native');
  if (!native?.available) throw new Error(`the native addon must be built for the tests: ${native?.reason}`);
}

export type Format = 'float32' | 'float16';
export const FORMATS: Format[] = ['float32', 'float16'];

export function row(values: number[], format: Format): Float32Array | Uint16Array {
  return format === 'float16' ? toFloat16Array(values) : Float32Array.from(values);
}
