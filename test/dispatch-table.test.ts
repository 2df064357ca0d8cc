// The TypeScript table builder: every malformed command is refused when it
// is added, with a message naming the command and the field; a user table
// runs like the built-in ones. And the bigram model's safetensors files.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { BigramModel, DispatchTableBuilder, openDevice, SafetensorsError, type CommandSpec } from '../lib/index.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe.each(GPU_BACKENDS)('DispatchTableBuilder on %s', (backend) => {
  const device = openDevice(backend);
  const other = openDevice(backend);
  afterAll(() => {
    device.dispose();
    other.dispose();
  });
  const tokens = device.createBuffer(64);
  const logits = device.createBuffer(new Uint16Array([0x3c00, 0x4000, 0x3800])); // 1, 2, 0.5
  const params = new Uint32Array([3, 0]); // md_argmax_params { vocab_size, flags }
  const noMask = device.createBuffer(4);
  const argmax = (): CommandSpec => ({
    buffers: [
      { index: 0, buffer: logits },
      { index: 2, buffer: tokens },
      { index: 3, buffer: noMask },
    ],
    params: { index: 1, bytes: params },
    patch: { rule: 'argmaxOutput', buffer: 2 },
  });

  it("builds a table of the user's commands that runs as a chain", async () => {
    const table = new DispatchTableBuilder(device).add('md_argmax_f16', { ...argmax(), label: 'pick' }).build();
    expect(table.size).toBe(1);
    expect(table.labels).toEqual(['pick']);
    await device.runChain(table, 4, 3); // writes tokens 5, 6, 7
    expect([...tokens.readUint32(4, 5)]).toEqual([0, 1, 1, 1, 0]);
  });

  const cases: [string, (b: DispatchTableBuilder) => unknown, string][] = [
    [
      'an unknown kernel',
      (b) => b.add('md_nope', argmax()),
      'Expected one of the device\'s kernels (md_add_f32, md_argmax_f16, md_argmax_f32, md_argmax_pick_f16, md_argmax_pick_f32, md_argmax_slices_f16, md_argmax_slices_f32, md_attention_f16, md_attention_f32, md_attention_merge_f32, md_attention_q8_0, md_draft_probability_f16, md_embed_f16, md_embed_rows_bf16, md_embed_rows_f16, md_embed_rows_f32, md_embed_rows_iq4_nl, md_embed_rows_iq4_xs, md_embed_rows_q2_k, md_embed_rows_q3_k, md_embed_rows_q4_0, md_embed_rows_q4_1, md_embed_rows_q4_k, md_embed_rows_q5_0, md_embed_rows_q5_1, md_embed_rows_q5_k, md_embed_rows_q6_k, md_embed_rows_q8_0, md_exp_values, md_fp_contract_probe, md_geglu_f32, md_half_from_f32, md_head_sample_bf16, md_head_sample_f16, md_head_sample_f32, md_head_sample_iq4_nl, md_head_sample_iq4_xs, md_head_sample_pick, md_head_sample_q2_k, md_head_sample_q3_k, md_head_sample_q4_0, md_head_sample_q4_1, md_head_sample_q4_k, md_head_sample_q5_0, md_head_sample_q5_1, md_head_sample_q5_k, md_head_sample_q6_k, md_head_sample_q8_0, md_kv_store_f16, md_kv_store_f32, md_kv_store_q8_0, md_lm_head_f16, md_matmul_bf16, md_matmul_f16, md_matmul_f32, md_matmul_id_bf16, md_matmul_id_f16, md_matmul_id_f32, md_matmul_id_iq4_nl, md_matmul_id_iq4_xs, md_matmul_id_q2_k, md_matmul_id_q3_k, md_matmul_id_q4_0, md_matmul_id_q4_1, md_matmul_id_q4_k, md_matmul_id_q5_0, md_matmul_id_q5_1, md_matmul_id_q5_k, md_matmul_id_q6_k, md_matmul_id_q8_0, md_matmul_iq4_nl, md_matmul_iq4_xs, md_matmul_q2_k, md_matmul_q3_k, md_matmul_q4_0, md_matmul_q4_1, md_matmul_q4_k, md_matmul_q5_0, md_matmul_q5_1, md_matmul_q5_k, md_matmul_q6_k, md_matmul_q8_0, md_matvec_batch_bf16, md_matvec_batch_f16, md_matvec_batch_f32, md_matvec_batch_iq4_nl, md_matvec_batch_iq4_xs, md_matvec_batch_q2_k, md_matvec_batch_q3_k, md_matvec_batch_q4_0, md_matvec_batch_q4_1, md_matvec_batch_q4_k, md_matvec_batch_q5_0, md_matvec_batch_q5_1, md_matvec_batch_q5_k, md_matvec_batch_q6_k, md_matvec_batch_q8_0, md_matvec_bf16, md_matvec_f16, md_matvec_f32, md_matvec_id_bf16, md_matvec_id_f16, md_matvec_id_f32, md_matvec_id_iq4_nl, md_matvec_id_iq4_xs, md_matvec_id_q2_k, md_matvec_id_q3_k, md_matvec_id_q4_0, md_matvec_id_q4_1, md_matvec_id_q4_k, md_matvec_id_q5_0, md_matvec_id_q5_1, md_matvec_id_q5_k, md_matvec_id_q6_k, md_matvec_id_q8_0, md_matvec_iq4_nl, md_matvec_iq4_xs, md_matvec_q2_k, md_matvec_q3_k, md_matvec_q4_0, md_matvec_q4_1, md_matvec_q4_k, md_matvec_q5_0, md_matvec_q5_1, md_matvec_q5_k, md_matvec_q6_k, md_matvec_q8_0, md_moe_group_u32, md_moe_route_f32, md_moe_sum_f32, md_noise_cells, md_rms_norm_f32, md_rope_f32, md_sample_f16, md_sample_wide_count_f16, md_sample_wide_edit_f16, md_sample_wide_filter_f16, md_sample_wide_noise_f16, md_sample_wide_pick_f16, md_sample_wide_prepare_f16, md_simd_layout_probe, md_swiglu_f32) for commands[0].kernel but received "md_nope" (string)',
    ],
    [
      'a buffer index over 30',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 31, buffer: logits }] }),
      'Expected an integer from 0 to 30 for commands[0].buffers[0].index but received 31 (number)',
    ],
    [
      'a buffer index used twice',
      (b) =>
        b.add('md_argmax_f16', {
          ...argmax(),
          buffers: [
            { index: 0, buffer: logits },
            { index: 0, buffer: tokens },
          ],
        }),
      'Expected an index no other buffer of the command uses for commands[0].buffers[1].index but received 0 (number)',
    ],
    [
      'a buffer on the params index',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 1, buffer: logits }] }),
      'Expected an index the params do not use for commands[0].buffers[0].index but received 1 (number)',
    ],
    [
      'params over 64 bytes',
      (b) => b.add('md_argmax_f16', { ...argmax(), params: { index: 1, bytes: new Uint8Array(65) } }),
      'Expected 1 to 64 bytes for commands[0].params.bytes but received "65 bytes" (string)',
    ],
    [
      'an offset outside the buffer',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 0, buffer: logits, offset: 8 }] }),
      'Expected a multiple of 4 from 0 to 5 (inside the buffer) for commands[0].buffers[0].offset but received 8 (number)',
    ],
    [
      'an unaligned offset',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 0, buffer: tokens, offset: 2 }] }),
      'Expected a multiple of 4 from 0 to 63 (inside the buffer) for commands[0].buffers[0].offset but received 2 (number)',
    ],
    [
      'a buffer of another device',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 0, buffer: other.createBuffer(4) }] }),
      'commands[0].buffers[0].buffer belongs to another device',
    ],
    [
      'not a buffer',
      (b) => b.add('md_argmax_f16', { ...argmax(), buffers: [{ index: 0, buffer: new Uint8Array(4) as never }] }),
      'Expected a GpuBuffer for commands[0].buffers[0].buffer but received a Uint8Array',
    ],
    [
      'threads not a multiple of 32',
      (b) => b.add('md_argmax_f16', { ...argmax(), threadsPerThreadgroup: 48 }),
      'Expected a multiple of 32 from 32 to 1024 for commands[0].threadsPerThreadgroup but received 48 (number)',
    ],
    [
      'too many threads',
      (b) => b.add('md_argmax_f16', { ...argmax(), threadsPerThreadgroup: 2048 }),
      'Expected an integer from 32 to 1024 for commands[0].threadsPerThreadgroup but received 2048 (number)',
    ],
    [
      'zero threadgroups',
      (b) => b.add('md_argmax_f16', { ...argmax(), threadgroups: 0 }),
      'Expected an integer from 1 to 4294967295 for commands[0].threadgroups but received 0 (number)',
    ],
    [
      'an unknown patch rule',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'later' } as never }),
      "Expected one of 'none', 'tokenOffset', 'position', 'kvLength', 'positionAndKvLength', 'argmaxOutput', 'sampledToken' for commands[0].patch.rule but received \"later\" (string)",
    ],
    [
      'a patch on an unbound buffer',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'tokenOffset', buffer: 5 } }),
      'Expected the index of a buffer the command binds for commands[0].patch.buffer but received 5 (number)',
    ],
    [
      'a patch field outside the params',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'position', fields: [8] } }),
      'Expected a multiple of 4 with 4 bytes inside the 8 bytes of params for commands[0].patch.fields[0] but received 8 (number)',
    ],
    [
      'a patch option of another rule',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'argmaxOutput', buffer: 2, fields: [0] } as never }),
      "Unknown option commands[0].patch.fields for rule 'argmaxOutput'; it takes: rule, buffer",
    ],
    [
      'a patch looking too far ahead',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'argmaxOutput', buffer: 2, ahead: 16777216 } }),
      'Expected an integer from 0 to 16777215 for commands[0].patch.ahead but received 16777216 (number)',
    ],
    [
      'a patch ahead that is not an integer',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'argmaxOutput', buffer: 2, ahead: 1.5 } }),
      'Expected an integer from 0 to 16777215 for commands[0].patch.ahead but received 1.5 (number)',
    ],
    [
      'no patch looking ahead',
      (b) => b.add('md_argmax_f16', { ...argmax(), patch: { rule: 'none', ahead: 1 } }),
      "Unknown option commands[0].patch.ahead for rule 'none'; it takes: rule",
    ],
    [
      'threadgroup memory not a multiple of 16',
      (b) => b.add('md_argmax_f16', { ...argmax(), threadgroupMemory: 24 }),
      "Expected a multiple of 16 bytes from 0 to 32768 (Metal's rule) for commands[0].threadgroupMemory but received 24 (number)",
    ],
    [
      'threadgroup memory over 32 KB',
      (b) => b.add('md_argmax_f16', { ...argmax(), threadgroupMemory: 32784 }),
      'Expected an integer from 0 to 32768 for commands[0].threadgroupMemory but received 32784 (number)',
    ],
    [
      'an unknown command option',
      (b) => b.add('md_argmax_f16', { ...argmax(), grid: 3 } as never),
      'Unknown option commands[0].grid; the options are: buffers, params, threadgroups, threadsPerThreadgroup, threadgroupMemory, patch, label',
    ],
  ];
  it.each(cases)('refuses %s', (_name, add, message) => {
    expect(() => add(new DispatchTableBuilder(device))).toThrow(message);
  });

  it('refuses a chain that would write past its buffer, naming the command, before running anything', async () => {
    const table = new DispatchTableBuilder(device).add('md_argmax_f16', { ...argmax(), label: 'pick' }).build();
    await expect(device.runChain(table, 14, 2)).rejects.toThrow(
      "runChain: encodeChain: command 'pick' (argmaxOutput) needs 68 bytes of buffer 2 for positions 14..15, but it has 64",
    );
    await expect(other.runChain(table, 0, 1)).rejects.toThrow('The table was built for another device');
  });

  it('refuses commands that would make a built-in kernel read or write outside its buffers, naming what is short', () => {
    const build = (kernel: string, spec: CommandSpec) => () => new DispatchTableBuilder(device).add(kernel, { ...spec, label: 'x' }).build();
    // vocab_size larger than the logits hold (3 halves = 6 bytes)
    expect(build('md_argmax_f16', { ...argmax(), params: { index: 1, bytes: new Uint32Array([1000, 0]) } })).toThrow(
      "createTable: command 'x': md_argmax_f16: buffer 0 (logits: vocab_size per threadgroup) needs 2000 bytes from byte 0, but the buffer has 6",
    );
    // 1,000,000 threadgroups, one token each, into a small output
    expect(build('md_argmax_f16', { ...argmax(), params: { index: 1, bytes: new Uint32Array([1, 0]) }, threadgroups: 1_000_000 })).toThrow(
      "createTable: command 'x': md_argmax_f16: buffer 0 (logits: vocab_size per threadgroup) needs 2000000 bytes from byte 0, but the buffer has 6",
    );
    const wide = device.createBuffer(2 * 1_000_000);
    expect(
      build('md_argmax_f16', {
        ...argmax(),
        buffers: [
          { index: 0, buffer: wide },
          { index: 2, buffer: tokens },
        ],
        params: { index: 1, bytes: new Uint32Array([1, 0]) },
        threadgroups: 1_000_000,
      }),
    ).toThrow(
      "createTable: command 'x': md_argmax_f16: buffer 2 (tokens: one per threadgroup) needs 4000000 bytes from byte 4, but the buffer has 64",
    );
    // a mask too short for its rows, and flags the kernel does not know
    expect(build('md_argmax_f16', { ...argmax(), params: { index: 1, bytes: new Uint32Array([3, 2]) }, threadgroups: 2 })).toThrow(
      "createTable: command 'x': md_argmax_f16: buffer 0 (logits: vocab_size per threadgroup) needs 12 bytes from byte 0, but the buffer has 6",
    );
    expect(
      build('md_argmax_f16', {
        ...argmax(),
        buffers: [
          { index: 0, buffer: wide },
          { index: 2, buffer: tokens },
          { index: 3, buffer: noMask },
        ],
        params: { index: 1, bytes: new Uint32Array([40, 2]) },
        threadgroups: 2,
      }),
    ).toThrow(
      "createTable: command 'x': md_argmax_f16: buffer 3 (mask: ceil(vocab_size / 32) words per row) needs 16 bytes from byte 0, but the buffer has 4",
    );
    expect(build('md_argmax_f16', { ...argmax(), params: { index: 1, bytes: new Uint32Array([3, 1]) } })).toThrow(
      "createTable: command 'x': md_argmax_f16: flags: only MD_FLAG_TOKEN_MASK",
    );
    // a params block shorter than the kernel's struct
    expect(build('md_sample_f16', { buffers: [{ index: 0, buffer: logits }], params: { index: 1, bytes: new Uint32Array([3, 0]) } })).toThrow(
      "createTable: command 'x': md_sample_f16: takes a 56-byte md_sampling_params at [[buffer(1)]], but the command passes 8 bytes of params at [[buffer(1)]]",
    );
    // threadgroup memory where the kernel takes none (it must never stand in for a buffer)
    expect(build('md_argmax_f16', { ...argmax(), threadgroupMemory: 64 })).toThrow(
      "createTable: command 'x': md_argmax_f16: takes no threadgroup memory argument",
    );
  });

  it('refuses a chain whose patched lengths outgrow a buffer at its last step', async () => {
    // md_exp_values reads `count` floats; a position patch on count makes the last step read more.
    const input = device.createBuffer(16 * 4);
    const output = device.createBuffer(16 * 4);
    const table = new DispatchTableBuilder(device)
      .add('md_exp_values', {
        label: 'exp',
        buffers: [
          { index: 1, buffer: input },
          { index: 2, buffer: output },
        ],
        params: { index: 0, bytes: new Uint32Array([0, 1]) },
        patch: { rule: 'kvLength', fields: [4] },
      })
      .build();
    await device.runChain(table, 0, 16); // counts 1 .. 16 fit
    await expect(device.runChain(table, 0, 17)).rejects.toThrow(
      "runChain: encodeChain: command 'exp' at position 16: md_exp_values: buffer 1 (input: count floats) needs 68 bytes from byte 0, but the buffer has 64",
    );
    // Looking 3 rows ahead, step p writes p + 4: three steps fewer fit.
    const ahead = new DispatchTableBuilder(device)
      .add('md_exp_values', {
        label: 'exp row 3',
        buffers: [
          { index: 1, buffer: input },
          { index: 2, buffer: output },
        ],
        params: { index: 0, bytes: new Uint32Array([0, 1]) },
        patch: { rule: 'kvLength', fields: [4], ahead: 3 },
      })
      .build();
    await device.runChain(ahead, 0, 13);
    await expect(device.runChain(ahead, 0, 14)).rejects.toThrow(
      "runChain: encodeChain: command 'exp row 3' at position 13: md_exp_values: buffer 1 (input: count floats) needs 68 bytes from byte 0, but the buffer has 64",
    );
  });

  it('refuses a chain too long for one call at once, without encoding or allocating it', async () => {
    const noPatch = new DispatchTableBuilder(device).add('md_argmax_f16', { ...argmax(), patch: { rule: 'none' } }).build();
    const started = performance.now();
    const error = await device.runChain(noPatch, 0, 2 ** 32 - 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe(
      'runChain: encodeChain: 4294967294 steps of a 1-command table are 4294967294 dispatches; at most 65536 per call: run the chain in chunks',
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    await device.runChain(noPatch, 0, 65_536); // the bound itself runs
  });

  it('40,000 chains committed without awaiting them all run, in order, on a bounded number of threads', async () => {
    const table = new DispatchTableBuilder(device).add('md_argmax_f16', { ...argmax(), patch: { rule: 'none' } }).build();
    const done: number[] = [];
    const chains = Array.from({ length: 40_000 }, (_, i) => device.runChain(table, 0, 1).then(() => done.push(i)));
    if (process.platform === 'linux') {
      const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
      expect(threads).toBeLessThan(100); // one queue thread per device, not one per commit
    }
    await Promise.all(chains);
    expect(done).toHaveLength(40_000);
    expect(done.every((v, i) => v === i)).toBe(true);
  });
});

describe('BigramModel', () => {
  it('the same seed gives the same weights; another seed others', () => {
    const a = BigramModel.fromSeed({ vocabSize: 10, dim: 3, seed: 1 });
    expect(BigramModel.fromSeed({ vocabSize: 10, dim: 3, seed: 1 }).head).toEqual(a.head);
    expect(BigramModel.fromSeed({ vocabSize: 10, dim: 3, seed: 2 }).head).not.toEqual(a.head);
  });

  it('native and js forwards agree bit for bit, and depend on the token', () => {
    const model = BigramModel.fromSeed({ vocabSize: 3000, dim: 64, seed: 3 });
    for (const token of [0, 1234, 2999, 0xffffffff]) expect(model.logits(token, 'native')).toEqual(model.logits(token, 'js'));
    expect(model.logits(0)).not.toEqual(model.logits(1));
    expect([...model.logits(0xffffffff)].every((h) => h === 0)).toBe(true);
  });

  it('round-trips through a safetensors file', async () => {
    const model = BigramModel.fromSeed({ vocabSize: 33, dim: 5, seed: 9 });
    const path = join(mkdtempSync(join(tmpdir(), 'md-')), 'bigram.safetensors');
    writeFileSync(path, model.toSafetensors());
    const loaded = await BigramModel.load(path);
    expect([loaded.vocabSize, loaded.dim]).toEqual([33, 5]);
    expect(loaded.embedding).toEqual(model.embedding);
    expect(loaded.head).toEqual(model.head);
  });

  it('refuses broken or foreign safetensors files with the reason', async () => {
    const bytes = BigramModel.fromSeed({ vocabSize: 4, dim: 2, seed: 1 }).toSafetensors();
    expect(() => BigramModel.fromSafetensors(bytes.subarray(0, 4))).toThrow(new SafetensorsError('4 bytes is too short for a safetensors file'));
    expect(() => BigramModel.fromSafetensors(bytes.subarray(0, bytes.length - 2))).toThrow(
      'tensor lm_head: bytes 16..32 are past the end of the 30 data bytes',
    );
    const header = new Uint8Array(8 + 2);
    new DataView(header.buffer).setBigUint64(0, 2n, true);
    header.set(new TextEncoder().encode('{}'), 8);
    expect(() => BigramModel.fromSafetensors(header)).toThrow("no tensor 'embedding' (a bigram model has 'embedding' and 'lm_head')");
    const path = join(mkdtempSync(join(tmpdir(), 'md-')), 'x.safetensors');
    writeFileSync(path, header);
    await expect(BigramModel.load(path)).rejects.toThrow(`${path}: no tensor 'embedding'`);
  });

  it('validates its options', () => {
    expect(() => BigramModel.fromSeed({ vocabSize: 0, dim: 2, seed: 1 })).toThrow(
      'Expected an integer from 1 to 16777216 for vocabSize but received 0 (number)',
    );
    expect(() => BigramModel.fromSeed({ vocabSize: 2, dim: 5000, seed: 1 })).toThrow(
      'Expected an integer from 1 to 4096 for dim but received 5000 (number)',
    );
    expect(() => BigramModel.fromSeed({ vocabSize: 2, dim: 2, seed: -1 })).toThrow(
      'Expected an integer from 0 to 4294967295 for seed but received -1 (number)',
    );
    expect(() => BigramModel.fromSeed({ vocabSize: 2, dim: 2, seed: 1 }).logits(1.5)).toThrow(
      'Expected a token id (an integer from 0 to 4294967295) for token but received 1.5 (number)',
    );
  });
});
