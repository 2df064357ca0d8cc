// The package's install step: builds the native addon with node-gyp.
//
// A failed build fails the install, loudly: npm shows an install script's
// output only when it fails, so a build that failed quietly would leave a
// package that is 10-100x slower (the js backend) with no word why. The
// error names the compiler's first error lines and what to install.
//
// METAL_DECODE_JS_ONLY=1 opts into a JavaScript-only install: a failed
// build is then a warning, and a marker file tells the loader (and so
// getBackends()) that the addon is missing on purpose.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Read by lib/native/load-addon.ts.
const jsOnlyMarker = join(root, 'build', 'js-only-install.txt');
const jsOnly = process.env.METAL_DECODE_JS_ONLY === '1';

const npmNodeGyp = process.env.npm_config_node_gyp;
const command = npmNodeGyp ? process.execPath : 'node-gyp';
// One compiler per core (node-gyp's default is one in all), unless the user set JOBS.
const jobs = process.env.JOBS ? [] : ['--jobs', 'max'];
const args = npmNodeGyp ? [npmNodeGyp, 'rebuild', ...jobs] : ['rebuild', ...jobs];
// Output is kept to quote the errors, and echoed for `npm install --foreground-scripts`.
const result = spawnSync(command, args, { cwd: root, shell: !npmNodeGyp, encoding: 'utf8', maxBuffer: 64 << 20 });
process.stdout.write(result.stdout ?? '');
process.stderr.write(result.stderr ?? '');

if (result.status === 0 && !result.error) {
  rmSync(jsOnlyMarker, { force: true });
  process.exit(0);
}

const why = result.error ? `${command} could not run: ${result.error.message}` : `node-gyp exited with ${result.status}`;
const output = `${result.stdout ?? ''}\n${result.stderr ?? ''}`.split('\n');
const errors = output.filter((line) => /\berror\b|not found|No such file/i.test(line)).slice(0, 8);

const fix =
  process.platform === 'darwin'
    ? 'install the Xcode Command Line Tools (`xcode-select --install`), then `npm rebuild metal-decode`'
    : process.platform === 'linux'
      ? 'install python3, make and a C++17 compiler (Debian/Ubuntu: `apt-get install python3 make g++`), then `npm rebuild metal-decode`'
      : 'install python3, make and a C++17 compiler (see node-gyp\'s README for this platform), then `npm rebuild metal-decode`';

const report = [
  `metal-decode: the native addon did not build (${why}).`,
  ...(errors.length ? ['First errors:', ...errors.map((line) => `  ${line.trim()}`)] : []),
  `Fix: ${fix}.`,
];

if (jsOnly) {
  mkdirSync(dirname(jsOnlyMarker), { recursive: true });
  writeFileSync(jsOnlyMarker, `${why}${errors.length ? `: ${errors[0].trim()}` : ''}\n`);
  console.warn([...report, 'METAL_DECODE_JS_ONLY=1: installed with the js backend only.'].join('\n'));
  process.exit(0);
}
console.error(
  [...report, 'Or install without the addon (the js backend only): METAL_DECODE_JS_ONLY=1 npm install metal-decode'].join('\n'),
);
process.exit(1);
