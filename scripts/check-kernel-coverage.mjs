#!/usr/bin/env node
// check-kernel-coverage.mjs: every kernel of every device the suite tests
// was dispatched on that device by some test. Run by npm test after vitest,
// which records each test file's dispatches in build/kernel-usage/
// (test/setup/kernel-usage.ts). The devices are the suite's GPU backends:
// 'emulated', and 'metal' too with METAL_DECODE_TEST_METAL=1 (on a Mac), as
// test/helpers.ts's GPU_BACKENDS says. Exit 1 naming each kernel no test
// ran, so a new kernel cannot land without a test that runs it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const usageDir = join(root, 'build', 'kernel-usage');
const { openDevice } = await import(join(root, 'dist', 'lib', 'index.js'));

const kinds = process.env.METAL_DECODE_TEST_METAL === '1' ? ['emulated', 'metal'] : ['emulated'];
if (!existsSync(usageDir)) {
  console.error(`check-kernel-coverage: ${usageDir} is missing: run the suite first (npm test runs it before this check)`);
  process.exit(1);
}
const dispatched = new Set(readdirSync(usageDir).flatMap((f) => JSON.parse(readFileSync(join(usageDir, f), 'utf8'))));
let missing = 0;
for (const kind of kinds) {
  const device = openDevice(kind);
  const names = device.kernelNames();
  device.dispose();
  const unexercised = names.filter((name) => !dispatched.has(`${kind}:${name}`));
  if (unexercised.length) {
    missing += unexercised.length;
    console.error(
      `check-kernel-coverage: on '${kind}', no test dispatched ${unexercised.length} of its ${names.length} kernels: ${unexercised.join(', ')}`,
    );
  } else {
    console.log(`check-kernel-coverage: every one of the ${names.length} kernels of '${kind}' was dispatched by the suite`);
  }
}
process.exit(missing ? 1 : 0);
