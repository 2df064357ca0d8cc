// device.mapFile: ranges of a file as read-only device buffers over its
// mapping, no copy (Metal's newBufferWithBytesNoCopy on a Mac). The
// emulated device wraps the same 16 KB-aligned ranges a Mac would, and a
// kernel reads the file's bytes through them at the returned offset.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { DispatchTableBuilder, openDevice } from '../lib/index.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe.each(GPU_BACKENDS)('GpuDevice.mapFile on %s', (backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'md-map-'));
  const path = join(dir, 'data.bin');
  // 40,000 bytes: byte i is i mod 251, so every offset is recognisable.
  const bytes = Uint8Array.from({ length: 40_000 }, (_, i) => i % 251);
  writeFileSync(path, bytes);
  const device = openDevice(backend);
  afterAll(() => {
    device.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives each range a buffer from the 16 KB boundary below it, holding the file's bytes", () => {
    const ranges = [
      { offset: 0, length: 100 },
      { offset: 16_416, length: 7_000 },
      { offset: 39_968, length: 32 },
    ];
    const mapped = device.mapFile(path, ranges);
    expect(mapped.map((m) => m.offset)).toEqual([0, 32, 39_968 - 32_768]);
    expect(mapped.map((m) => m.buffer.byteLength)).toEqual([100, 32 + 7_000, 40_000 - 32_768]);
    mapped.forEach(({ buffer, offset }, i) => {
      const { offset: at, length } = ranges[i];
      expect(new Uint8Array(buffer.read(offset, length))).toEqual(bytes.subarray(at, at + length));
    });
    for (const m of mapped) m.buffer.dispose();
  });

  it('is read-only: write() throws and leaves the file as it was', () => {
    const [{ buffer }] = device.mapFile(path, [{ offset: 0, length: 16 }]);
    expect(() => buffer.write(0, Uint8Array.of(1))).toThrow('write: this buffer maps a file read-only (device.mapFile); kernels may only read it');
    expect(new Uint8Array(buffer.read(0, 4))).toEqual(Uint8Array.of(0, 1, 2, 3));
    buffer.dispose();
  });

  it('a kernel reads the file through the buffer at its offset', async () => {
    // Three float16 logits (1, 2, 0.5) at byte 20,000 of a file: the argmax reads them in place.
    const file = join(dir, 'logits.bin');
    const data = new Uint8Array(20_006);
    data.set(new Uint8Array(Uint16Array.of(0x3c00, 0x4000, 0x3800).buffer), 20_000);
    writeFileSync(file, data);
    const [{ buffer, offset }] = device.mapFile(file, [{ offset: 20_000, length: 6 }]);
    const tokens = device.createBuffer(16);
    const table = new DispatchTableBuilder(device)
      .add('md_argmax_f16', {
        buffers: [
          { index: 0, buffer, offset },
          { index: 2, buffer: tokens },
          { index: 3, buffer: device.createBuffer(4) },
        ], // no mask
        params: { index: 1, bytes: Uint32Array.of(3, 0) }, // md_argmax_params { vocab_size, flags }
        patch: { rule: 'argmaxOutput', buffer: 2 },
      })
      .build();
    await device.runChain(table, 0, 1);
    expect(tokens.readUint32(1, 1)[0]).toBe(1);
    table.dispose();
    buffer.dispose();
    tokens.dispose();
  });

  it('refuses ranges outside the file, bad fields and missing files, naming them', () => {
    expect(() =>
      device.mapFile(path, [
        { offset: 0, length: 1 },
        { offset: 39_999, length: 2 },
      ]),
    ).toThrow('mapFile: ranges[1]: bytes 39999..40001 are not a non-empty range of the 40000-byte file');
    expect(() => device.mapFile(path, [{ offset: -1, length: 2 }])).toThrow('Expected a non-negative integer for ranges[0].offset but received -1');
    expect(() => device.mapFile(path, [{ offset: 0, length: 0 }])).toThrow('Expected a positive integer for ranges[0].length but received 0');
    expect(() => device.mapFile(join(dir, 'missing.bin'), [{ offset: 0, length: 1 }])).toThrow(/^mapFile: .*missing\.bin/);
    expect(() => device.mapFile(path, 'all' as never)).toThrow('Expected an array of { offset, length } for ranges but received "all" (string)');
  });
});
