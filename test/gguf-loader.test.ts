// gguf-loader.test.ts: loadModel's errors, options, progress and
// AbortSignal, and a seeded fuzz run over damaged files: every file either
// loads or is a GgufError naming the file and the field; nothing crashes.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { AbortError, GgufError, loadModel } from '../lib/index.js';
import { writeGguf } from './gguf/gguf-writer.js';
import { modelTensors, rng, writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-loader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spec = variantSpec('llama2', 'Q4_0', 4);
let good: string;
beforeAll(async () => {
  good = join(dir, 'good.gguf');
  await writeRandomModel(good, spec);
});

async function loadError(path: string): Promise<GgufError> {
  const error = await loadModel(path, { threads: 1 }).then(
    (m) => {
      m.dispose();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GgufError);
  return error as GgufError;
}

/** The spec's file with one change to its metadata or tensors. */
async function variant(name: string, change: (m: ReturnType<typeof modelTensors>) => void): Promise<string> {
  const parts = modelTensors(spec);
  change(parts);
  const path = join(dir, `${name}.gguf`);
  await writeGguf(path, parts.metadata, parts.tensors);
  return path;
}

describe('a file loadModel cannot run is a GgufError naming the file and the field', () => {
  test('missing, empty, not GGUF, truncated', async () => {
    const missing = join(dir, 'nope.gguf');
    expect((await loadError(missing)).message).toBe(`${missing}: file: cannot be read (ENOENT)`);
    const text = join(dir, 'text.gguf');
    writeFileSync(text, 'hello, this is not a model at all');
    expect((await loadError(text)).message).toBe(`${text}: header: not a GGUF file (no GGUF magic number)`);
    const bytes = readFileSync(good);
    const cutHeader = join(dir, 'cut-header.gguf');
    writeFileSync(cutHeader, bytes.subarray(0, 2000));
    const e1 = await loadError(cutHeader);
    expect(e1.field).toBe('header');
    expect(e1.file).toBe(cutHeader);
    const cutData = join(dir, 'cut-data.gguf');
    writeFileSync(cutData, bytes.subarray(0, bytes.length - 100));
    expect((await loadError(cutData)).message).toMatch(
      new RegExp(
        `^${cutData}: tensor blk\\.1\\.ffn_down\\.weight: bytes \\d+ \\+ \\d+ run past the end of the file \\(${bytes.length - 100} bytes\\)$`,
      ),
    );
  });

  test('an unsupported architecture or tensor type, before any work', async () => {
    const gemma = await variant('gemma', (m) => {
      m.metadata['general.architecture'] = { type: 'string', value: 'gemma' };
    });
    expect((await loadError(gemma)).message).toBe(
      `${gemma}: general.architecture: "gemma" is not supported (supported: llama, qwen2, qwen3, qwen3moe, gemma3, phi3)`,
    );
    const iq2 = await variant('iq2_xxs', (m) => {
      const t = m.tensors.find((x) => x.name === 'blk.0.attn_q.weight')!;
      t.type = 16; // IQ2_XXS: 66 bytes per 256 values
      t.data = new Uint8Array((t.dims[0] / 256) * 66 * t.dims[1]);
    });
    expect((await loadError(iq2)).message).toBe(
      `${iq2}: tensor blk.0.attn_q.weight: type IQ2_XXS is not supported (supported: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16)`,
    );
  });

  test('a repeated metadata key is a corrupt file; a huge tensor name is cut in the message', async () => {
    // general.namX patched to general.name in the bytes: two entries with one key.
    const twice = await variant('twice', (m) => {
      m.metadata['general.namX'] = { type: 'string', value: 'other' };
    });
    const bytes = readFileSync(twice);
    const at = bytes.indexOf('general.namX');
    bytes.write('general.name', at, 'latin1');
    writeFileSync(twice, bytes);
    const entries = Object.keys(modelTensors(spec).metadata).length + 1;
    expect((await loadError(twice)).message).toBe(
      `${twice}: header: ${entries} metadata entries but ${entries - 1} distinct keys: a key is repeated (a corrupt file)`,
    );
    const longName = 'x'.repeat(65_536);
    const huge = await variant('huge-name', (m) => {
      m.tensors.push({ name: longName, type: 99, dims: [32], data: new Uint8Array(128) });
    });
    const error = await loadError(huge);
    expect(error.field).toBe(`tensor ${'x'.repeat(193)}... (65543 characters)`);
    expect(error.message.length).toBeLessThan(2_000);
  });

  test('a missing tensor, a wrong shape, a missing or bad metadata value', async () => {
    const noV = await variant('no-v', (m) => {
      m.tensors = m.tensors.filter((t) => t.name !== 'blk.1.attn_v.weight');
    });
    expect((await loadError(noV)).message).toBe(`${noV}: tensor blk.1.attn_v.weight: missing (the architecture needs it)`);
    const shape = await variant('shape', (m) => {
      const t = m.tensors.find((x) => x.name === 'blk.0.ffn_up.weight')!;
      t.dims = [t.dims[0], t.dims[1] / 2];
      t.data = (t.data as Uint8Array).subarray(0, (t.data as Uint8Array).length / 2);
    });
    expect((await loadError(shape)).message).toBe(`${shape}: tensor blk.0.ffn_up.weight: shape [128, 128], expected [128, 256]`);
    const noWidth = await variant('no-width', (m) => {
      delete m.metadata['llama.embedding_length'];
    });
    expect((await loadError(noWidth)).message).toBe(`${noWidth}: llama.embedding_length: missing`);
    const heads = await variant('heads', (m) => {
      m.metadata['llama.attention.head_count_kv'] = { type: 'u32', value: 3 };
    });
    // The native checks' refusals name the GGUF key, not the config's field.
    const headsError = await loadError(heads);
    expect(headsError.message).toBe(`${heads}: llama.attention.head_count_kv: 3 does not divide headCount 4`);
    expect(headsError.field).toBe('llama.attention.head_count_kv');
    const yarn = await variant('yarn', (m) => {
      m.metadata['llama.rope.scaling.type'] = { type: 'string', value: 'yarn' };
    });
    expect((await loadError(yarn)).message).toBe(
      `${yarn}: llama.rope.scaling.type: "yarn" is not supported (supported: none, linear; llama3 factors come as the rope_freqs tensor)`,
    );
    const template = await variant('template', (m) => {
      m.metadata['tokenizer.chat_template'] = { type: 'string', value: '{% if %}' };
    });
    expect((await loadError(template)).message).toMatch(new RegExp(`^${template}: tokenizer\\.chat_template: the chat template does not parse`));
    const vocab = await variant('vocab', (m) => {
      m.metadata['tokenizer.ggml.eos_token_id'] = { type: 'u32', value: 5000 };
    });
    expect((await loadError(vocab)).message).toBe(`${vocab}: tokenizer.ggml.eos_token_id: expected a token id from 0 to 299, got 5000`);
  });
});

describe('options, progress and abort', () => {
  test('bad options are errors naming them', async () => {
    await expect(loadModel(good, { threads: 0 })).rejects.toThrow(
      new RangeError('Expected an integer from 1 to 256 for threads but received 0 (number)'),
    );
    await expect(loadModel(good, { batchSize: 1.5 })).rejects.toThrow(TypeError);
    await expect(loadModel(good, { cpuKernels: 'sse' as never })).rejects.toThrow(/for cpuKernels but received "sse"/);
    // Accelerate is macOS's (and auto's pick there): elsewhere a name this build cannot run.
    if (process.platform === 'darwin') {
      const onAccelerate = await loadModel(good, { cpuKernels: 'accelerate' });
      expect(onAccelerate.info.cpuKernels).toBe('accelerate');
      onAccelerate.dispose();
    } else {
      await expect(loadModel(good, { cpuKernels: 'accelerate' })).rejects.toThrow(
        new RangeError('Expected kernels this CPU runs for cpuKernels but received "accelerate" (string)'),
      );
    }
    // An unknown option name is a TypeError listing the options, as everywhere in the package.
    await expect(loadModel(good, { gpuLayers: 2 } as never)).rejects.toThrow(
      new TypeError(
        'Unknown option gpuLayers; the options are: threads, signal, onLoadProgress, prefetch, batchSize, cpuKernels, vocabOnly, kvCacheType, maxSequences, prefillChunk, repack',
      ),
    );
    await expect(loadModel(42 as never)).rejects.toThrow(TypeError);
  });

  test('onLoadProgress climbs to 1; the model knows its file', async () => {
    const seen: number[] = [];
    const model = await loadModel(good, { threads: 1, onLoadProgress: (p) => seen.push(p) });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[seen.length - 1]).toBe(1);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(model.info).toMatchObject({ path: good, architecture: 'llama', fileSize: readFileSync(good).length, trainedContextLength: 4096 });
    expect(model.eosTokens).toEqual([297, 299]); // the file's EOS, and <|im_end|> by its text (as llama.cpp)
    expect(new TextDecoder().decode(model.tokenizer.tokenBytes(72))).toBe('H'); // byte-level symbol of 'H'
    expect(model.tokenizer.tokenBytes(297).length).toBe(0); // a control token reads as nothing
    model.dispose();
  });

  test('an aborted signal rejects with an AbortError, before or during the read', async () => {
    await expect(loadModel(good, { signal: AbortSignal.abort('stop') })).rejects.toThrow(AbortError);
    const controller = new AbortController();
    const error = await loadModel(good, { signal: controller.signal, onLoadProgress: () => controller.abort('mid-load') }).catch((e: unknown) => e);
    // The file is one prefetch chunk: the abort lands after it, before the model is returned.
    expect(error).toBeInstanceOf(AbortError);
    expect((error as AbortError).message).toBe('Loading the model was aborted');
    expect((error as AbortError).cause).toBe('mid-load');
  });
});

test('fuzz: 400 damaged files (flipped bytes, overwritten sizes and counts, truncations) each load or give a GgufError', async () => {
  const bytes = readFileSync(good);
  const next = rng(2024);
  const headerEnd = 8000; // metadata and tensor table: where damage means most
  const outcomes = { loaded: 0, rejected: 0 };
  for (let i = 0; i < 400; i++) {
    const damaged = Buffer.from(bytes);
    const kind = i % 4;
    if (kind === 0) {
      for (let k = 0; k < 1 + Math.floor(next() * 8); k++) damaged[Math.floor(next() * headerEnd)] = Math.floor(next() * 256);
    } else if (kind === 1) {
      // A u64 field (a count, a string length, a dimension or an offset) set huge.
      const at = 8 + Math.floor(next() * (headerEnd - 16));
      damaged.writeBigUInt64LE(next() < 0.5 ? 0xffffffffffffn : BigInt(Math.floor(next() * 2 ** 40)), at);
    } else if (kind === 2) {
      damaged.writeUInt32LE(Math.floor(next() * 40), Math.floor(next() * headerEnd)); // small values: types, n_dims
    }
    const length = kind === 3 ? Math.floor(next() * bytes.length) : damaged.length;
    const path = join(dir, `fuzz-${i}.gguf`);
    writeFileSync(path, damaged.subarray(0, length));
    try {
      const model = await loadModel(path, { threads: 1, prefetch: false });
      const sequence = model.openSequence({ backend: 'native', contextSize: 8 });
      await sequence.evaluate(Uint32Array.of(1, 2), 0);
      model.dispose();
      outcomes.loaded++;
    } catch (error) {
      if (!(error instanceof GgufError)) throw new Error(`fuzz case ${i}: ${String(error)}`, { cause: error });
      expect(error.file).toBe(path);
      outcomes.rejected++;
    }
    rmSync(path);
  }
  expect(outcomes.rejected).toBeGreaterThan(100);
  expect(outcomes.loaded).toBeGreaterThan(10);
});
