// backends.ts: which implementations can run here, and choosing one.
import { BackendUnavailableError } from './errors.js';
import { loadAddon } from './native/load-addon.js';
import { NativeSampler } from './native/native-sampler.js';
import type { BackendChoice } from './sampling-options.js';

export type BackendName = 'native' | 'js';

export interface BackendInfo {
  name: BackendName;
  available: boolean;
  /** Why it is (un)available, in words for a person. */
  reason: string;
}

/** Every backend, whether it can run here and why. */
export function getBackends(): BackendInfo[] {
  const addon = loadAddon();
  return [
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

/**
 * The backend a choice resolves to here: 'auto' is native when the addon
 * loaded, else js. A backend named explicitly that cannot run is an error,
 * never a silent fallback.
 */
export function selectBackend(choice: BackendChoice): BackendName {
  if (choice === 'js') return 'js';
  if (choice === 'native') {
    requireNativeSampler();
    return 'native';
  }
  return loadAddon().ok ? 'native' : 'js';
}
