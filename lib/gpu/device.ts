// device.ts: a GPU device for users' own dispatch tables: buffers, kernels,
// tables and chains. A thin class over the addon's hidden native handle.
import { BackendUnavailableError, callerStack, invalidParameterError, rethrowWithCallerStack, rethrowWithStack } from '../errors.js';
import type { NativeAddon, NativeBuffer, NativeDevice, NativeTable, NativeTransformer } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';
import { isInteger, isPlainObject, isUint32 } from '../predicates.js';
import { openShared } from './shared-devices.js';

export type GpuDeviceKind = 'metal' | 'emulated';

/** Memory the CPU and the GPU share. Writes and reads copy. */
export class GpuBuffer {
  /** @internal */ readonly native: NativeBuffer;
  /** @internal */ readonly device: GpuDevice;

  /** @internal */
  constructor(device: GpuDevice, native: NativeBuffer) {
    this.device = device;
    this.native = native;
  }

  #disposed = false;

  get byteLength(): number {
    this.#requireLive();
    return this.native.length;
  }

  // A buffer is freed by its own dispose() or its device's (whose `native`
  // getter throws once it is disposed).
  #requireLive(): void {
    void this.device.native;
    if (this.#disposed) throw new Error('This buffer was disposed');
  }

  /** Frees the buffer's memory now; chains already submitted keep it until they finish. */
  dispose(): void {
    this.#disposed = true;
    this.native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * Copies `data`'s bytes (any typed array or DataView, on an ArrayBuffer or
   * a SharedArrayBuffer) to `offset`. Do not write what a running chain reads.
   */
  write(offset: number, data: ArrayBufferView): void {
    if (!ArrayBuffer.isView(data)) throw invalidParameterError('data', 'an ArrayBufferView (a typed array or a DataView)', data, 'type');
    checkRange('offset', offset, data.byteLength, this.byteLength);
    this.native.write(offset, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  /** A copy of `byteLength` bytes from `offset`. */
  read(offset: number, byteLength: number): ArrayBuffer {
    checkRange('offset', offset, byteLength, this.byteLength);
    return this.native.read(offset, byteLength);
  }

  /** `count` uint32 values from element `index` (token ids, for example). */
  readUint32(index: number, count: number): Uint32Array {
    return new Uint32Array(this.read(index * 4, count * 4));
  }

  /** `count` float16 values as bits, from element `index`. */
  readFloat16(index: number, count: number): Uint16Array {
    return new Uint16Array(this.read(index * 2, count * 2));
  }
}

function checkRange(name: string, offset: unknown, length: number, size: number): void {
  if (!isInteger(offset) || offset < 0) throw invalidParameterError(name, 'a non-negative integer', offset, isInteger(offset) ? 'range' : 'type');
  if (!Number.isInteger(length) || length < 0 || offset + length > size) {
    throw new RangeError(`Bytes ${offset}..${offset + length} are outside the ${size}-byte buffer`);
  }
}

/** A recorded forward pass (see DispatchTableBuilder in dispatch-table.ts). */
export class DispatchTable {
  /** @internal */ readonly native: NativeTable;
  /** @internal */ readonly device: GpuDevice;

  /** @internal */
  constructor(device: GpuDevice, native: NativeTable) {
    this.device = device;
    this.native = native;
  }

  /** The number of commands per token. */
  get size(): number {
    return this.native.size;
  }

  /** The commands' labels, in order. */
  get labels(): string[] {
    return this.native.labels;
  }

  /** Lets go of the commands and the buffers they keep alive; runChain refuses the table after. */
  dispose(): void {
    this.native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** A Metal device, or the emulated one (the same kernels on CPU fibers). */
export class GpuDevice {
  readonly kind: GpuDeviceKind;
  /** @internal */ readonly addon: NativeAddon;
  #native: NativeDevice | undefined;
  readonly #name: string;

  /** @internal */
  constructor(kind: GpuDeviceKind, addon: NativeAddon, native: NativeDevice) {
    this.kind = kind;
    this.addon = addon;
    this.#native = native;
    this.#name = native.name;
  }

  /** e.g. "Apple M2 Pro" or "emulated (CPU fibers, forward order)". */
  get name(): string {
    return this.#name;
  }

  /** @internal The native device; throws after dispose(). */
  get native(): NativeDevice {
    if (!this.#native) throw new Error(`The ${this.kind} device was disposed (its buffers and tables with it)`);
    return this.#native;
  }

  /** Every kernel this device can dispatch, sorted. */
  kernelNames(): string[] {
    return this.native.kernelNames();
  }

  /** The most threads one threadgroup of `kernel` may have. */
  maxThreadsPerThreadgroup(kernel: string): number {
    return this.native.maxThreadsPerThreadgroup(kernel);
  }

  /**
   * Compiles Metal source and adds its kernels (metal device only; the
   * emulated device runs just the kernels built into the addon and throws).
   */
  addKernelSource(source: string): void {
    if (typeof source !== 'string') throw invalidParameterError('source', 'Metal source code (a string)', source, 'type');
    try {
      this.native.addKernelSource(source);
    } catch (error) {
      rethrowWithCallerStack(error, this.addKernelSource);
    }
  }

  /** A zero-initialised buffer of `byteLength` bytes, or one holding a copy of `data`. */
  createBuffer(init: number | ArrayBufferView): GpuBuffer {
    let length: number;
    if (typeof init === 'number') {
      if (!isInteger(init) || init < 1) throw invalidParameterError('byteLength', 'a positive integer', init, 'range');
      length = init;
    } else if (ArrayBuffer.isView(init)) {
      if (init.byteLength === 0) throw invalidParameterError('data', 'a non-empty typed array', init, 'range');
      length = init.byteLength;
    } else {
      throw invalidParameterError('init', 'a byte length or a typed array', init, 'type');
    }
    const buffer = new GpuBuffer(this, this.native.createBuffer(length)); // zeroed
    if (typeof init !== 'number') buffer.write(0, init);
    return buffer;
  }

  /**
   * Ranges of a file as read-only buffers, without a copy: the GPU reads the
   * file's mapped pages where they are (Metal's newBufferWithBytesNoCopy;
   * the emulated device reads the mapping). Each range gets a buffer that
   * starts at the 16 KB boundary below it; bind it at `offset`, where the
   * range starts. write() on these buffers throws. The file stays mapped
   * until every buffer is disposed.
   */
  mapFile(path: string, ranges: readonly { offset: number; length: number }[]): { buffer: GpuBuffer; offset: number }[];
  /** @internal A GGUF model's weights: its own mapping, the file opened at load (never the path again). */
  mapFile(model: NativeTransformer, ranges: readonly { offset: number; length: number }[]): { buffer: GpuBuffer; offset: number }[];
  mapFile(path: string | NativeTransformer, ranges: readonly { offset: number; length: number }[]): { buffer: GpuBuffer; offset: number }[] {
    if (typeof path !== 'string' && (typeof path !== 'object' || path === null))
      throw invalidParameterError('path', 'a file path (a string)', path, 'type');
    if (!Array.isArray(ranges)) throw invalidParameterError('ranges', 'an array of { offset, length }', ranges, 'type');
    ranges.forEach((r: unknown, i) => {
      if (!isPlainObject(r)) throw invalidParameterError(`ranges[${i}]`, 'an object { offset, length }', r, 'type');
      if (!isInteger(r.offset) || r.offset < 0) throw invalidParameterError(`ranges[${i}].offset`, 'a non-negative integer', r.offset, 'range');
      if (!isInteger(r.length) || r.length < 1) throw invalidParameterError(`ranges[${i}].length`, 'a positive integer', r.length, 'range');
    });
    try {
      return this.native.mapFile(path, ranges).map(({ buffer, offset }) => ({ buffer: new GpuBuffer(this, buffer), offset }));
    } catch (error) {
      rethrowWithCallerStack(error, this.mapFile);
    }
  }

  /**
   * Runs `n` steps of `table` (positions start .. start + n - 1) in one
   * command buffer. Resolves when the GPU is done; the event loop is free
   * meanwhile. Chains on one device run in the order they were submitted.
   */
  async runChain(table: DispatchTable, start: number, n: number): Promise<void> {
    if (!(table instanceof DispatchTable)) throw invalidParameterError('table', 'a DispatchTable', table, 'type');
    if (table.device !== this) throw new TypeError('The table was built for another device');
    if (!isUint32(start)) throw invalidParameterError('start', 'an integer from 0 to 4294967295', start, isInteger(start) ? 'range' : 'type');
    if (!isUint32(n)) throw invalidParameterError('n', 'an integer from 0 to 4294967295', n, isInteger(n) ? 'range' : 'type');
    const stack = callerStack(this.runChain);
    try {
      await this.native.runChain(table.native, start, n);
    } catch (error) {
      rethrowWithStack(error, stack);
    }
  }

  /**
   * Releases the device, and at once the memory of its buffers and tables
   * (they throw if used after); chains already submitted still finish.
   */
  dispose(): void {
    this.#native?.dispose();
    this.#native = undefined;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

// The addon, for a device of `kind` (checked); BackendUnavailableError when it is missing.
function addonFor(kind: unknown): NativeAddon {
  if (kind !== 'metal' && kind !== 'emulated') {
    throw invalidParameterError('kind', "'metal' or 'emulated'", kind, typeof kind === 'string' ? 'range' : 'type');
  }
  const addon = loadAddon();
  if (!addon.ok) throw new BackendUnavailableError(kind, `it runs in the native addon, which is unavailable: ${addon.reason}`);
  return addon.addon;
}

const unavailable = (kind: GpuDeviceKind, error: unknown) =>
  new BackendUnavailableError(kind, error instanceof Error ? error.message : String(error));

/**
 * Opens a GPU device: 'metal' (macOS on Apple silicon) or 'emulated'.
 * Throws BackendUnavailableError saying why when it cannot start; there is
 * no fallback to another device. Blocking: on a Mac, Metal compiles the
 * kernel library and every pipeline on this thread (seconds the first time);
 * openDeviceAsync does it off the event loop.
 */
export function openDevice(kind: GpuDeviceKind): GpuDevice {
  const addon = addonFor(kind);
  try {
    return new GpuDevice(kind, addon, new addon.Device(kind));
  } catch (error) {
    throw unavailable(kind, error);
  }
}

/**
 * The same as openDevice, with the kernels compiled and the start-up probes
 * run on a thread of the addon's own: the event loop keeps turning. Rejects
 * with BackendUnavailableError saying why the device cannot start.
 */
export async function openDeviceAsync(kind: GpuDeviceKind): Promise<GpuDevice> {
  const addon = addonFor(kind);
  try {
    return new GpuDevice(kind, addon, await addon.openDevice(kind));
  } catch (error) {
    throw unavailable(kind, error);
  }
}

const sharedDevices = new Map<GpuDeviceKind, GpuDevice>();

/**
 * The process's device of `kind` (shared-devices.ts: the one the sampling
 * kernels use too), kept open: what models' sequences run on, so each
 * Session does not open (and compile kernels for) a device of its own.
 * loadModel opens it off the event loop beforehand where it can.
 */
export function sharedDevice(kind: GpuDeviceKind): GpuDevice {
  let device = sharedDevices.get(kind);
  if (!device) {
    const shared = openShared(kind);
    if (!shared.ok) throw new BackendUnavailableError(kind, shared.reason);
    sharedDevices.set(kind, (device = new GpuDevice(kind, shared.addon, shared.device)));
  }
  return device;
}
