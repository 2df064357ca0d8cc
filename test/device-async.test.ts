// Asynchronous GPU work settles from the device's completion, not from a
// libuv worker parked waiting for it; it survives the device being
// disposed and the JavaScript environment being torn down.
import { describe, expect, it } from 'vitest';

import { requireNativeBuilt, runModule } from './helpers.js';

requireNativeBuilt();
const run = (code: string, env: Record<string, string> = {}) => runModule(code, { env });

// A table that keeps the emulated device busy (about 150 ms per run
// here): the noise of 2^22 cells.
const BUSY_TABLE = `
  import { DispatchTableBuilder, openDevice, sampleAsync, toFloat16Array } from './dist/lib/index.js';
  const device = openDevice('emulated');
  const count = 1 << 22;
  const out = device.createBuffer(count * 4);
  const busy = new DispatchTableBuilder(device).add('md_noise_cells', {
    buffers: [{ index: 1, buffer: out }], params: { index: 0, bytes: new Uint32Array([0, count]) },
    threadgroups: count / 1024, threadsPerThreadgroup: 1024,
  }).build();`;

describe('asynchronous device work', () => {
  it('a chain in flight holds no libuv thread: with a pool of one, file reads finish first', () => {
    const result = run(
      `${BUSY_TABLE}
      import { readFile } from 'node:fs/promises';
      const order = [];
      const chain = device.runChain(busy, 0, 16).then(() => order.push('chain'));
      const token = sampleAsync(toFloat16Array(Array.from({ length: 262144 }, (_, i) => Math.sin(i))),
        { backend: 'emulated', temperature: 1, seed: 1 }).then(() => order.push('sample'));
      await readFile('package.json').then(() => order.push('read'));
      await Promise.all([chain, token]);
      console.log(JSON.stringify(order));`,
      { UV_THREADPOOL_SIZE: '1' },
    );
    expect(result.stderr).toBe('');
    // The read needs the pool's only thread four times over (open, stat,
    // read, close), after the sample that took it first: it finishes while
    // the long chain (16 runs of the busy table) still runs. One run took
    // 147 ms and the sample 149 ms here, so one run was not always longer
    // than the sample and the read on a loaded 2-core machine. (A sample is
    // quick on a loaded machine, so it may come first or not.)
    const order = JSON.parse(result.stdout) as string[];
    expect([...order].sort()).toEqual(['chain', 'read', 'sample']);
    expect(order.indexOf('read')).toBeLessThan(order.indexOf('chain'));
  });

  it('disposing the device with a chain in flight lets the chain finish and resolve', () => {
    const result = run(`${BUSY_TABLE}
      const chain = device.runChain(busy, 0, 1);
      device.dispose();
      await chain;
      let error;
      try { out.read(0, 4); } catch (e) { error = e.message; }
      console.log(JSON.stringify({ resolved: true, error }));`);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({ resolved: true, error: 'The emulated device was disposed (its buffers and tables with it)' });
  });

  it('terminating a worker thread with chains and samples in flight leaves the process running', () => {
    const worker = `${BUSY_TABLE.replace(/\n/g, ' ')}
      device.runChain(busy, 0, 1);
      sampleAsync(toFloat16Array(Array.from({ length: 100000 }, (_, i) => Math.cos(i))), { backend: 'emulated', temperature: 1 });
      process.stdout.write('');
      (await import('node:worker_threads')).parentPort.postMessage('busy');`;
    const result = run(`
      import { Worker } from 'node:worker_threads';
      for (let i = 0; i < 3; i++) {
        const w = new Worker(${JSON.stringify(worker)}, { eval: true, type: 'module' });
        await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
        await w.terminate();
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));  // the work completes after its environment is gone
      console.log('alive');`);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe('alive');
  });
});

describe('device memory', () => {
  it('dispose() frees buffers, tables and the device at once (no garbage collection needed)', () => {
    const result = run(`
      import { readFileSync } from 'node:fs';
      import { DispatchTableBuilder, openDevice } from './dist/lib/index.js';
      const maps = () => readFileSync('/proc/self/maps', 'utf8').split('\\n').length;
      // 150 devices opened, used and disposed, their buffers and tables still referenced:
      // each device's fiber stacks are thousands of mappings, so keeping them would run out.
      const kept = [];
      const before = maps();
      for (let i = 0; i < 150; i++) {
        const device = openDevice('emulated');
        const out = device.createBuffer(4096);
        const table = new DispatchTableBuilder(device).add('md_noise_cells', {
          buffers: [{ index: 1, buffer: out }], params: { index: 0, bytes: new Uint32Array([0, 1024]) },
          threadgroups: 1, threadsPerThreadgroup: 1024 }).build();
        await device.runChain(table, 0, 1);
        device.dispose();
        kept.push(out, table);
      }
      let readError;
      try { kept[0].read(0, 4); } catch (e) { readError = e.message; }
      console.log(JSON.stringify({ grown: maps() - before, readError }));`);
    expect(result.stderr).toBe('');
    const out = JSON.parse(result.stdout) as { grown: number; readError: string };
    // One device's fiber stacks stay in the runner pool (about 4,100
    // mappings); 150 devices' worth would be over 600,000.
    expect(out.grown).toBeLessThan(20_000);
    expect(out.readError).toBe('The emulated device was disposed (its buffers and tables with it)');
  });
});

describe('sessions on a GPU device', () => {
  it("share the model's weights and free their own buffers on dispose: 12 sessions of a 32 MB model stay near one copy", () => {
    const result = run(`
      import { BigramModel, Session } from './dist/lib/index.js';
      // V 32000 x d 256 x 2 tensors x 2 bytes: 32 MB of weights.
      const model = BigramModel.fromSeed({ vocabSize: 32000, dim: 256, seed: 4 });
      const rss = () => process.memoryUsage().rss;
      const first = new Session(model, { backend: 'emulated', contextSize: 64 });
      await first.generate([1], { maxTokens: 1, temperature: 1, seed: 1 });
      first.dispose();
      const before = rss();
      const tokens = [];
      for (let i = 0; i < 12; i++) {
        const session = new Session(model, { backend: 'emulated', contextSize: 64 });
        tokens.push((await session.generate([1], { maxTokens: 1, temperature: 1, seed: 1 })).tokens[0]);
        session.dispose();
      }
      console.log(JSON.stringify({ grownMb: (rss() - before) / 2 ** 20, same: tokens.every((t) => t === tokens[0]) }));`);
    expect(result.stderr).toBe('');
    const out = JSON.parse(result.stdout) as { grownMb: number; same: boolean };
    expect(out.same).toBe(true);
    expect(out.grownMb).toBeLessThan(100); // a copy per session would be 384 MB
  });
});

describe('opening a device off the event loop', () => {
  it('openDeviceAsync gives the device openDevice gives, with its probes passed and its kernels listed', async () => {
    const { openDevice, openDeviceAsync } = await import('../lib/index.js');
    const opening = openDeviceAsync('emulated');
    expect(opening).toBeInstanceOf(Promise);
    const device = await opening;
    const blocking = openDevice('emulated');
    expect(device.kind).toBe('emulated');
    expect(device.kernelNames()).toEqual(blocking.kernelNames());
    expect(device.kernelNames()).toContain('md_simd_layout_probe');
    device.dispose();
    blocking.dispose();
  });

  it('rejects as openDevice throws: the same reason for metal here, the same parameter error for an unknown kind', async () => {
    const { openDevice, openDeviceAsync } = await import('../lib/index.js');
    const reasonOf = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return error as Error;
      }
      throw new Error('did not throw');
    };
    for (const kind of ['cuda', 7] as never[]) {
      const thrown = reasonOf(() => openDevice(kind));
      await expect(openDeviceAsync(kind)).rejects.toThrow(thrown.message);
    }
    if (process.platform !== 'darwin') {
      const thrown = reasonOf(() => openDevice('metal'));
      expect(thrown.message).toMatch(/Metal needs macOS on Apple silicon/);
      await expect(openDeviceAsync('metal')).rejects.toThrow(thrown.message);
    }
  });

  it('the shared device opened asynchronously is the one the sampling kernels and the sequences then use', async () => {
    const { openShared, openSharedAsync } = await import('../lib/gpu/shared-devices.js');
    const first = await openSharedAsync('emulated');
    expect(first.ok).toBe(true);
    expect(openShared('emulated')).toBe(first);
    await expect(openSharedAsync('emulated')).resolves.toBe(first);
  });
});
