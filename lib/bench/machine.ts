// machine.ts: what a benchmark ran on, printed with every run and kept in
// its JSON, so numbers from two machines are never compared blind.
import { readFileSync } from 'node:fs';
import os from 'node:os';

import { openGpu } from '../gpu/gpu-sampler.js';

export interface MachineInfo {
  cpu: string;
  cores: number;
  /** The Metal device's name, or null when Metal does not run here. */
  gpu: string | null;
  memoryGiB: number;
  platform: string;
  arch: string;
  node: string;
  packageVersion: string;
  /** The CPU's features the CPU kernels choose by (x86 levels, VNNI, AMX; arm64's dot product and i8mm), where the system lists them. */
  cpuFeatures: string[];
}

// /proc/cpuinfo's names: x86's "flags", arm64's "Features" (asimddp: the dot product).
const KERNEL_FEATURES = [
  'avx2',
  'fma',
  'f16c',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_vnni',
  'avx512_bf16',
  'avx_vnni',
  'amx_tile',
  'amx_int8',
  'asimd',
  'asimddp',
  'i8mm',
  'fphp',
];

/** The kernel-relevant features on Linux's /proc/cpuinfo, in KERNEL_FEATURES' order; [] where there is none. */
export function cpuFeatures(cpuinfo = readCpuinfo()): string[] {
  const line = cpuinfo.split('\n').find((l) => /^(flags|Features)\s*:/.test(l));
  if (line === undefined) return [];
  const listed = new Set(
    line
      .slice(line.indexOf(':') + 1)
      .trim()
      .split(/\s+/),
  );
  return KERNEL_FEATURES.filter((f) => listed.has(f));
}

function readCpuinfo(): string {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return '';
  }
}

/** This package's version, from its package.json (found upwards: the code runs from lib/ in tests and dist/lib/ when built). */
export function packageVersion(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    try {
      const manifest = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: string; version: string };
      if (manifest.name === 'metal-decode') return manifest.version;
    } catch {
      // no package.json here: look further up
    }
    if (dir.pathname === '/') return 'unknown';
  }
}

export function machineInfo(): MachineInfo {
  const metal = openGpu('metal');
  return {
    cpu: os.cpus()[0]?.model?.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    gpu: metal.ok ? metal.sampler.deviceName : null,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: os.platform(),
    arch: os.arch(),
    node: process.version,
    packageVersion: packageVersion(),
    cpuFeatures: cpuFeatures(),
  };
}

export function describeMachine(m: MachineInfo): string {
  return (
    `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, GPU: ${m.gpu ?? 'none (Metal does not run here)'}; ` +
    `${m.platform}-${m.arch}, Node ${m.node}, metal-decode ${m.packageVersion}` +
    (m.cpuFeatures.length > 0 ? `; CPU features: ${m.cpuFeatures.join(' ')}` : '')
  );
}
