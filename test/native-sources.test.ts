// The C++ sources are listed in three build files: CMake's md_core (the C++
// tests), binding.gyp (the addon) and the fuzz script's forward pass. A
// file one of them misses builds everywhere but links nowhere, and only
// that build's link fails (a fuzz run found one): every file of
// native/core must be in the first two, and every file the forward pass
// is made of in the third.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const sourcesUnder = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourcesUnder(join(dir, e.name)) : e.name.endsWith('.cpp') ? [relative(root, join(root, dir, e.name))] : [],
  );
const core = sourcesUnder('native/core').sort();

it('CMake and binding.gyp build every source of native/core', () => {
  expect(core.length).toBeGreaterThan(20);
  const cmake = readFileSync(join(root, 'CMakeLists.txt'), 'utf8');
  const library = /add_library\(md_core STATIC([^)]*)\)/.exec(cmake)![1].split(/\s+/).filter(Boolean).sort();
  expect(library).toEqual(core);
  const gyp = readFileSync(join(root, 'binding.gyp'), 'utf8');
  expect(core.filter((f) => !gyp.includes(`"${f}"`))).toEqual([]);
});

it("the fuzz script's forward pass links every source of native/core/transformer and native/core/quant", () => {
  const script = readFileSync(join(root, 'scripts/fuzz-native.sh'), 'utf8');
  const listed = /transformer=\(([^)]*)\)/.exec(script)![1].split(/\s+/).filter(Boolean);
  const needed = core.filter((f) => f.startsWith('native/core/transformer/') || f.startsWith('native/core/quant/'));
  expect(needed.filter((f) => !listed.includes(f))).toEqual([]);
});
