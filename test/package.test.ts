// The package as a user gets it: `npm pack`, then installed as a
// dependency of another project, which builds the addon from the tarball
// alone and generates tokens.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'md-package-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// The install compiles the addon: 100 s on a quiet 2-core machine, 280 s
// with both cores busy beside it; the bounds are 3x that.
const INSTALL_MS = 900_000;
const npm = (args: string[], cwd: string) =>
  spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'error' }, timeout: INSTALL_MS });

describe('the published package', () => {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, encoding: 'utf8' }))[0] as {
    filename: string;
    files: { path: string }[];
  };
  const files = new Set(packed.files.map((f) => f.path));

  it('ships what the README links to and the license, and no tests', () => {
    for (const needed of [
      'LICENSE',
      'README.md',
      'docs/generation.md',
      'docs/sampling.md',
      'binding.gyp',
      'dist/lib/index.js',
      'dist/lib/index.d.ts',
    ]) {
      expect(files, needed).toContain(needed);
    }
    expect([...files].filter((f) => f.startsWith('native/tests/') || f.startsWith('test/'))).toEqual([]);
    for (const link of readFileSync(join(root, 'README.md'), 'utf8').matchAll(/\]\(((?:docs|bench)\/[^)#]+)/g)) {
      if (link[1].endsWith('.md') && link[1].startsWith('docs/')) expect(files, link[1]).toContain(link[1]);
    }
  });

  it('every source map points at a file that is shipped', () => {
    const maps = [...files].filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(10);
    for (const map of maps) {
      for (const source of JSON.parse(readFileSync(join(root, map), 'utf8')).sources as string[]) {
        expect(files, `${map} -> ${source}`).toContain(posix.normalize(posix.join(posix.dirname(map), source)));
      }
    }
  });

  it(
    'installs as a dependency, builds its addon from the tarball and generates',
    () => {
      const app = join(work, 'app');
      execFileSync('mkdir', ['-p', app]);
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'md-user', version: '1.0.0', type: 'module', private: true }));
      const install = npm(['install', '--no-audit', '--no-fund', join(work, packed.filename)], app);
      expect(install.status, install.stderr).toBe(0);
      writeFileSync(
        join(app, 'main.js'),
        `
      import { BigramModel, generate, getBackends } from 'metal-decode';
      const model = BigramModel.fromText('the cat sat on the mat and the dog sat on the log ');
      const result = await generate(model, 'the ', { maxTokens: 12, temperature: 0.7, seed: 3 });
      console.log(JSON.stringify({ native: getBackends()[2].available, backend: result.backend, n: result.tokens.length }));`,
      );
      const run = spawnSync(process.execPath, ['main.js'], { cwd: app, encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual({ native: true, backend: 'native', n: 12 });
    },
    INSTALL_MS + 60_000,
  );
});
