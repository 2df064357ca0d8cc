// Prints "yes" when this is an x86-64 build machine whose CPU has FMA
// instructions (binding.gyp then builds the emulator's kernels with -mfma,
// so a multiply-add the kernels fail to keep unfused really fuses), else
// "no". Other architectures need no flag: arm64 always has FMA.
import { readFileSync } from 'node:fs';

let fma = false;
if (process.arch === 'x64' && process.platform === 'linux') {
  try {
    fma = /^flags\s*:.*\bfma\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    fma = false;
  }
}
console.log(fma ? 'yes' : 'no');
