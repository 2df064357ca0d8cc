// The machine line every benchmark prints: the CPU features its CPU
// kernels choose by, read from /proc/cpuinfo's x86 flags or arm64 features.
import { expect, it } from 'vitest';

import { cpuFeatures, describeMachine, machineInfo } from '../lib/bench/machine.js';

it('lists the kernel-relevant x86 flags and arm64 features, in one order, and nothing else', () => {
  const x86 = 'processor\t: 0\nflags\t\t: fpu sse2 avx512_vnni avx2 fma avx512f amx_int8 amx_tile sha_ni\nbogomips\t: 5192\n';
  expect(cpuFeatures(x86)).toEqual(['avx2', 'fma', 'avx512f', 'avx512_vnni', 'amx_tile', 'amx_int8']);
  const arm = 'processor\t: 0\nFeatures\t: fp asimd evtstrm aes asimddp sha512 i8mm bf16\nCPU implementer\t: 0x61\n';
  expect(cpuFeatures(arm)).toEqual(['asimd', 'asimddp', 'i8mm']);
  expect(cpuFeatures('')).toEqual([]);
  expect(cpuFeatures('processor\t: 0\n')).toEqual([]);
});

it('prints the features on the machine line where the system lists them', () => {
  const m = machineInfo();
  const line = describeMachine({ ...m, cpuFeatures: ['avx2', 'avx512f'] });
  expect(line).toMatch(/; CPU features: avx2 avx512f$/);
  expect(describeMachine({ ...m, cpuFeatures: [] })).not.toContain('CPU features');
  if (process.platform === 'linux' && process.arch === 'x64') expect(m.cpuFeatures).toContain('avx2');
});
