// backends.ts: which implementations can run here, and choosing one.
import { BackendUnavailableError } from './errors.js';
import { kernelInputProblem, openGpu, type GpuSampler } from './gpu/gpu-sampler.js';
import { loadAddon } from './native/load-addon.js';
import { sampleJs } from './js/js-sampler.js';
import { NativeSampler } from './native/native-sampler.js';
import type { BackendName, RowSampler } from './row-sampler.js';
import type { BackendChoice, ResolvedSampling } from './sampling-options.js';

export type { BackendName };

export interface BackendInfo {
  name: BackendName;
  available: boolean;
  /** Why it is (un)available, in words for a person. */
  reason: string;
}

/** Every backend, whether it can run here and why (opens the GPU devices to find out). */
export function getBackends(): BackendInfo[] {
  const addon = loadAddon();
  const metal = openGpu('metal');
  const emulated = openGpu('emulated');
  return [
    {
      name: 'metal',
      available: metal.ok,
      reason: metal.ok ? `the .metal kernels on ${metal.sampler.deviceName}` : metal.reason,
    },
    {
      name: 'emulated',
      available: emulated.ok,
      reason: emulated.ok
        ? 'the same .metal kernels compiled as C++ and run on CPU fibers: slow and exact, for CI and kernel debugging'
        : emulated.reason,
    },
    {
      name: 'native',
      available: addon.ok,
      reason: addon.ok ? `C++ sampler from ${addon.path}` : addon.reason,
    },
    { name: 'js', available: true, reason: 'pure TypeScript sampler; runs wherever Node.js runs' },
  ];
}

let nativeSampler: NativeSampler | undefined;

/** The native sampler, or a BackendUnavailableError saying why there is none. */
export function requireNativeSampler(): NativeSampler {
  if (nativeSampler) return nativeSampler;
  const addon = loadAddon();
  if (!addon.ok) throw new BackendUnavailableError('native', addon.reason);
  return (nativeSampler = new NativeSampler(addon.addon));
}

/** The kernels on `kind`, or a BackendUnavailableError saying why they cannot run. */
export function requireGpuSampler(kind: 'metal' | 'emulated'): GpuSampler {
  const device = openGpu(kind);
  if (!device.ok) throw new BackendUnavailableError(kind, device.reason);
  return device.sampler;
}

/** Whether `backend` runs the Metal kernels (on the GPU, or on CPU fibers): the one place that says which do. */
export function runsKernels(backend: BackendName | BackendChoice): backend is 'metal' | 'emulated' {
  return backend === 'metal' || backend === 'emulated';
}

const jsRowSampler: RowSampler = {
  backend: 'js',
  runsKernels: false,
  sample: sampleJs,
  sampleAsync: async (logits, s) => sampleJs(logits, s),
};

const rowSamplers = new Map<BackendName, RowSampler>([['js', jsRowSampler]]);

/** The row sampler of `backend`, made once; a BackendUnavailableError saying why when it cannot run here. */
export function rowSampler(backend: BackendName): RowSampler {
  let sampler = rowSamplers.get(backend);
  if (sampler) return sampler;
  if (runsKernels(backend)) {
    const gpu = requireGpuSampler(backend);
    sampler = { backend, runsKernels: true, sample: (logits, s) => gpu.sample(logits, s), sampleAsync: (logits, s) => gpu.sampleAsync(logits, s) };
  } else {
    const native = requireNativeSampler();
    sampler = {
      backend,
      runsKernels: false,
      sample: (logits, s) => native.sample(logits, s),
      sampleAsync: async (logits, s) => native.sample(logits, s),
    };
  }
  rowSamplers.set(backend, sampler);
  return sampler;
}

/**
 * The backend a choice resolves to here. 'auto' is metal when it runs here
 * and the kernels take these inputs (when given), else native when the
 * addon loaded, else js. A backend named explicitly that cannot run is an
 * error, never a silent fallback.
 */
export function selectBackend(choice: BackendChoice, input?: { logits: Float32Array | Uint16Array; sampling: ResolvedSampling }): BackendName {
  switch (choice) {
    case 'js':
      return 'js';
    case 'native':
      requireNativeSampler();
      return 'native';
    case 'metal':
    case 'emulated':
      requireGpuSampler(choice);
      return choice;
    case 'auto':
      if (openGpu('metal').ok && (!input || !kernelInputProblem(input.logits, input.sampling))) return 'metal';
      return autoCpuBackend();
  }
}

let warnedAboutJs = false;

/**
 * What 'auto' runs on the CPU: native when the addon loaded, else js. The
 * first time that is js because the addon is missing (not turned off on
 * purpose), the process gets one warning with the reason: js is 10-100x
 * slower, and nobody should find that out from a profiler.
 */
export function autoCpuBackend(): 'native' | 'js' {
  const addon = loadAddon();
  if (addon.ok) return 'native';
  if (!addon.deliberate && !warnedAboutJs) {
    warnedAboutJs = true;
    process.emitWarning(`backend 'auto' runs on 'js', the TypeScript sampler (10-100x slower than 'native'), because ${addon.reason}`, {
      code: NO_ADDON_WARNING_CODE,
    });
  }
  return 'js';
}

/** The code of the warning autoCpuBackend() emits. */
export const NO_ADDON_WARNING_CODE = 'METAL_DECODE_NO_ADDON';
