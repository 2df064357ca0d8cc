// shared-devices.ts: the process's one native device of each kind, which
// models' sequences and the sampling kernels share, so a Mac compiles the
// kernel library once. openShared() opens it on the calling thread;
// openSharedAsync() on a thread of the addon's own (what loadModel awaits,
// so that a Mac's seconds of Metal compilation never hold the event loop).
// Both fill the same cache, failures included: a kind that cannot open
// here says why, every time, without trying again.
import type { DeviceKind, NativeAddon, NativeDevice } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';

export type SharedDevice = { ok: true; addon: NativeAddon; device: NativeDevice } | { ok: false; reason: string };

const opened = new Map<DeviceKind, SharedDevice>();
const opening = new Map<DeviceKind, Promise<SharedDevice>>();

function failure(error: unknown): SharedDevice {
  return { ok: false, reason: error instanceof Error ? error.message : String(error) };
}

function addonOrReason(): { ok: true; addon: NativeAddon } | { ok: false; reason: string } {
  const addon = loadAddon();
  return addon.ok ? addon : { ok: false, reason: `it runs in the native addon, which is unavailable: ${addon.reason}` };
}

/** The shared device of `kind`, opened here on first use (blocking: on a Mac, Metal compiles its kernels now). */
export function openShared(kind: DeviceKind): SharedDevice {
  const known = opened.get(kind);
  if (known) return known;
  const addon = addonOrReason();
  let result: SharedDevice;
  if (!addon.ok) result = addon;
  else {
    try {
      result = { ok: true, addon: addon.addon, device: new addon.addon.Device(kind) };
    } catch (error) {
      result = failure(error);
    }
  }
  opened.set(kind, result);
  return result;
}

/** The same device, opened off the event loop; later openShared() calls find it. */
export function openSharedAsync(kind: DeviceKind): Promise<SharedDevice> {
  const known = opened.get(kind);
  if (known) return Promise.resolve(known);
  let pending = opening.get(kind);
  if (pending === undefined) {
    const addon = addonOrReason();
    pending = !addon.ok
      ? Promise.resolve<SharedDevice>(addon)
      : addon.addon.openDevice(kind).then(
          (device): SharedDevice => ({ ok: true, addon: addon.addon, device }),
          (error: unknown) => failure(error),
        );
    pending = pending.then((result) => {
      opening.delete(kind);
      // A synchronous open that finished first wins; this one's device is let go.
      const first = opened.get(kind);
      if (first) {
        if (result.ok && (!first.ok || first.device !== result.device)) result.device.dispose();
        return first;
      }
      opened.set(kind, result);
      return result;
    });
    opening.set(kind, pending);
  }
  return pending;
}
