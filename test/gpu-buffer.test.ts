// GPU buffers take what the API says (any ArrayBufferView, shared or not)
// and refuse anything else with an error naming the argument.
import { describe, expect, it } from 'vitest';

import { openDevice } from '../lib/index.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe.each(GPU_BACKENDS)('GpuBuffer on %s', (backend) => {
  it('writes typed arrays on a SharedArrayBuffer, DataViews and offset views, and reads them back', () => {
    using device = openDevice(backend);
    const buffer = device.createBuffer(32);
    const shared = new Float32Array(new SharedArrayBuffer(8));
    shared.set([1.5, -2]);
    buffer.write(0, shared);
    const view = new DataView(new ArrayBuffer(12), 4, 8);
    view.setUint32(0, 0xdeadbeef, true);
    view.setUint32(4, 7, true);
    buffer.write(8, view);
    const bytes = new Uint8Array([9, 9, 1, 2, 3, 4, 9, 9]).subarray(2, 6);
    buffer.write(16, bytes);
    expect([...new Float32Array(buffer.read(0, 8))]).toEqual([1.5, -2]);
    expect([...buffer.readUint32(2, 2)]).toEqual([0xdeadbeef, 7]);
    expect([...new Uint8Array(buffer.read(16, 4))]).toEqual([1, 2, 3, 4]);
    expect(device.createBuffer(new DataView(new ArrayBuffer(8))).byteLength).toBe(8);
  });

  it('refuses what is not a view, naming the argument, and ranges outside the buffer', () => {
    using device = openDevice(backend);
    const buffer = device.createBuffer(16);
    expect(() => buffer.write(0, 'str' as never)).toThrow(
      new TypeError('Expected an ArrayBufferView (a typed array or a DataView) for data but received "str" (string)'),
    );
    expect(() => buffer.write(0, [1, 2] as never)).toThrow(TypeError);
    expect(() => buffer.write(12, new Uint32Array(2))).toThrow(new RangeError('Bytes 12..20 are outside the 16-byte buffer'));
    expect(() => buffer.read(-1, 4)).toThrow(RangeError);
  });
});
