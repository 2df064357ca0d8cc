// The kernels' float math gives the CPU's bits: every one of the 2^23 noise
// cells, and md_exp over 2^22 inputs spread across its whole range. On the
// emulated device (its kernels built with contraction on and FMA
// instructions, so only metal/md_exact_float.h keeps them unfused) and, with
// METAL_DECODE_TEST_METAL=1, on the GPU, where this is the measurement that
// Metal's compiler keeps every operation unfused.
import { describe, expect, it } from 'vitest';

import { DispatchTableBuilder, openDevice, type GpuDevice } from '../lib/index.js';
import { float32Bits, float32FromBits } from '../lib/js/float16.js';
import { gumbel, mdExp, uniform } from '../lib/js/noise.js';
import { GPU_BACKENDS } from './helpers.js';

const CELLS = 1 << 23;
const THREADS = 1024;

/** Runs probe `kernel` over `count` items with output `out` (and input `input`), one thread each. */
async function runProbe(device: GpuDevice, kernel: string, count: number, input?: Float32Array): Promise<Float32Array> {
  const out = device.createBuffer(count * 4);
  const buffers = [{ index: input ? 2 : 1, buffer: out }];
  if (input) buffers.push({ index: 1, buffer: device.createBuffer(input) });
  const table = new DispatchTableBuilder(device)
    .add(kernel, {
      buffers,
      params: { index: 0, bytes: new Uint32Array([0, count]) },
      threadgroups: Math.ceil(count / THREADS),
      threadsPerThreadgroup: THREADS,
    })
    .build();
  await device.runChain(table, 0, 1);
  return new Float32Array(out.read(0, count * 4));
}

/** The indices where `got` and `expected` differ in any bit (at most 5). */
function differences(got: Float32Array, expected: (i: number) => number): string[] {
  const found: string[] = [];
  for (let i = 0; i < got.length && found.length < 5; i++) {
    const want = expected(i);
    if (float32Bits(got[i]) !== float32Bits(want)) found.push(`${i}: got ${got[i]}, the CPU ${want}`);
  }
  return found;
}

describe.each(GPU_BACKENDS)('exact float arithmetic on %s', (backend) => {
  it('every one of the 2^23 noise cells equals the CPU, bit for bit', async () => {
    using device = openDevice(backend);
    const noise = await runProbe(device, 'md_noise_cells', CELLS);
    expect(differences(noise, (c) => gumbel(uniform(c << 9)))).toEqual([]);
  });

  it('md_exp equals the CPU on 2^22 inputs across [-87, 0] and the flushed ones below', async () => {
    using device = openDevice(backend);
    // Evenly spaced float32 bit patterns from -0 to below -87 (0xC2AE0000),
    // where the result is flushed to 0.
    const count = 1 << 22;
    const stride = Math.floor((0xc2b00000 - 0x80000000) / count);
    const inputs = Float32Array.from({ length: count }, (_, i) => float32FromBits((0x80000000 + i * stride) >>> 0));
    const exp = await runProbe(device, 'md_exp_values', count, inputs);
    expect(differences(exp, (i) => mdExp(inputs[i]))).toEqual([]);
  });
});
