// file-changed.test.ts: a model file changed after loadModel. The weights
// are the mapping of the file opened at load: every backend reads that
// one (the GPU buffers wrap the model's own mapping; nothing maps the path
// again), and each forward pass first checks the open file, so that a
// truncation is an error naming the file rather than a SIGBUS when a pass
// reads past the new end, and an in-place write is an error rather than
// weights that may have changed under the model. Replacing the file by a
// rename (what a download or an update does) is no change: the loaded
// model keeps running the weights it loaded, on every backend.
import { copyFileSync, mkdtempSync, renameSync, rmSync, truncateSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { generate, loadModel, Session } from '../lib/index.js';
import { convertModel } from './gguf/convert-model.js';
import { sharedModel } from './gguf/shared-model.js';
import { GPU_BACKENDS } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'md-file-changed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const BACKENDS = ['native', ...GPU_BACKENDS] as const;

function copyOfStories(name: string): string {
  const path = join(dir, name);
  copyFileSync(sharedModel('stories260K.gguf'), path);
  return path;
}

describe('a model file changed after loadModel', () => {
  test("truncated: every backend's next pass is an error naming the file, sessions opened before too; the process lives", async () => {
    const path = copyOfStories('truncated.gguf');
    const model = await loadModel(path, { threads: 1 });
    const before = new Session(model, { backend: 'native', contextSize: 64 });
    await before.generate('Once upon a time', { maxTokens: 2 });
    truncateSync(path, 1000);
    const message = `${path}: the file was truncated to 1000 bytes after it was loaded (it had 1185376); its weights cannot be read. Load it again`;
    await expect(before.generate(' there', { maxTokens: 2 })).rejects.toThrow(message);
    for (const backend of BACKENDS) {
      await expect(generate(model, 'Once upon a time', { backend, maxTokens: 4 })).rejects.toThrow(message);
    }
    before.dispose();
    model.dispose();
  });

  test('written in place: an error naming the file, before any pass reads weights that may have changed', async () => {
    const path = copyOfStories('written.gguf');
    const model = await loadModel(path, { threads: 1 });
    utimesSync(path, new Date(), new Date(Date.now() + 5_000)); // what a write does to the file's times
    for (const backend of BACKENDS) {
      await expect(generate(model, 'Once upon a time', { backend, maxTokens: 4 })).rejects.toThrow(
        `${path}: the file was written to after it was loaded (its size or modification time changed)`,
      );
    }
    model.dispose();
  });

  test('replaced by a rename: every backend keeps the loaded weights, the same tokens as before', async () => {
    const path = copyOfStories('replaced.gguf');
    const model = await loadModel(path, { threads: 1 });
    const story = async (backend: (typeof BACKENDS)[number]) =>
      (await generate(model, 'Once upon a time', { backend, temperature: 0, maxTokens: 24 })).tokens;
    const expected = await story('native');
    // Another model (the same one in Q4_0: other weights, other tokens) renamed over the path.
    const other = join(dir, 'other.gguf');
    convertModel(sharedModel('stories260K.gguf'), other, 'Q4_0');
    renameSync(other, path);
    for (const backend of BACKENDS) expect(await story(backend), backend).toEqual(expected);
    // The path now holds the other model: loaded anew, it tells another story.
    const replaced = await loadModel(path, { threads: 1 });
    try {
      expect(replaced.info.tensorTypes).toMatchObject({ Q4_0: 32 });
      const theirs = (await generate(replaced, 'Once upon a time', { backend: 'native', temperature: 0, maxTokens: 24 })).tokens;
      expect(theirs).not.toEqual(expected);
    } finally {
      replaced.dispose();
      model.dispose();
    }
  });
});
