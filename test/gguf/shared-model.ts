// shared-model.ts: the real trained models in ../shared/models (never in
// this repository). A test that needs one fails, naming the path and what
// to do, when it is missing: it never skips.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SHARED_MODELS = fileURLToPath(new URL('../../../shared/models/', import.meta.url));

/** The path of ../shared/models/<file>; an Error saying where it was looked for when it is not there. */
export function sharedModel(file: string): string {
  const path = SHARED_MODELS + file;
  if (!existsSync(path)) {
    throw new Error(
      `the real model ${file} is missing: looked for ${path} (the shared models folder beside this checkout; ` +
        'see its README). These tests read it from there; it is never copied into the repository.',
    );
  }
  return path;
}
