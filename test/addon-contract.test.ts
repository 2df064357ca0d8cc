// The addon checks its own inputs: a direct caller gets an error, never a
// crash or a silently clamped value.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../lib/native/load-addon.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe('addon sampleRow', () => {
  const result = loadAddon();
  if (!result.ok) throw new Error(result.reason);
  const addon = result.addon;
  const slots = () => {
    const v = new Float64Array(addon.samplingSlots.count);
    v[addon.samplingSlots.topP] = 1;
    v[addon.samplingSlots.repeatPenalty] = 1;
    return v;
  };
  const empty = [new Uint32Array(0), new Uint32Array(0), new Float32Array(0)] as const;

  it('samples with well-formed arguments', () => {
    expect(addon.sampleRow(new Float32Array([1, 4, 2]), slots(), ...empty)).toBe(1);
  });

  it('rejects a non-integer slot by name', () => {
    const v = slots();
    v[addon.samplingSlots.seed] = -1;
    expect(() => addon.sampleRow(new Float32Array([1]), v, ...empty)).toThrow(
      new RangeError('sampleRow: seed must be an integer from 0 to 4294967295'),
    );
  });

  it('rejects out-of-range parameters with the core message', () => {
    const v = slots();
    v[addon.samplingSlots.topP] = 0;
    expect(() => addon.sampleRow(new Float32Array([1]), v, ...empty)).toThrow(new RangeError('topP: must be in (0, 1]'));
  });

  it('rejects wrong argument types', () => {
    expect(() => addon.sampleRow(new Float64Array(3) as never, slots(), ...empty)).toThrow(TypeError);
    expect(() => addon.sampleRow(new Float32Array(3), new Float64Array(2), ...empty)).toThrow('sampleRow: slots has the wrong length');
    expect(() => (addon.sampleRow as (...a: unknown[]) => number)(new Float32Array(3))).toThrow('sampleRow: expected 5 arguments');
  });
});
