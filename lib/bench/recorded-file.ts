// recorded-file.ts: a file the benchmark models from, recorded in the
// package's bench/ folder (the kernels' counts), read once and parsed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { packageRoot } from '../native/load-addon.js';

const cache = new Map<string, unknown>();

/**
 * bench/`name`, parsed by `parse` (which names the file in its errors),
 * read once. A missing file is an error saying what it holds (`what`) and
 * what writes it (`writer`).
 */
export function readRecorded<T>(name: string, what: string, writer: string, parse: (text: string, file: string) => T): T {
  if (cache.has(name)) return cache.get(name) as T;
  const file = join(packageRoot(), 'bench', name);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${what} is missing (${(e as Error).message}); ${writer} writes it`);
  }
  const parsed = parse(text, file);
  cache.set(name, parsed);
  return parsed;
}
