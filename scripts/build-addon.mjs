// The package's install step: builds the native addon with node-gyp.
//
// A failed build does not fail the install: the package still works with the
// `js` backend, and getBackends() reports why `native` is missing (the
// loader in lib/native/load-addon.ts lists what it tried). Set
// METAL_DECODE_REQUIRE_NATIVE=1 to make a failed build fail the install.
import { spawnSync } from 'node:child_process';

const npmNodeGyp = process.env.npm_config_node_gyp;
const command = npmNodeGyp ? process.execPath : 'node-gyp';
const args = npmNodeGyp ? [npmNodeGyp, 'rebuild'] : ['rebuild'];
const result = spawnSync(command, args, { stdio: 'inherit', shell: !npmNodeGyp });

if (result.status !== 0) {
  const why = result.error ? result.error.message : `node-gyp exited with ${result.status}`;
  console.warn(`metal-decode: the native addon did not build (${why}).`);
  console.warn('metal-decode: the js backend still works; getBackends() says why native is missing.');
  if (process.env.METAL_DECODE_REQUIRE_NATIVE === '1') process.exit(1);
}
