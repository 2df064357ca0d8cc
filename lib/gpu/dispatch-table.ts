// dispatch-table.ts: building a DispatchTable in TypeScript. Every command
// is checked when it is added (kernel, buffers, params, sizes, patch), with
// errors that name the command and the field, before anything reaches the
// addon (which checks again, for callers that bypass this file).
import { invalidParameterError } from '../errors.js';
import type { NativeCommand, PatchRuleName } from '../native/contract.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { DispatchTable, GpuBuffer, type GpuDevice } from './device.js';

/**
 * What changes per token. Step i of a chain from `start` reads the token at
 * position p = start + i and produces the one at p + 1; token buffers hold
 * the whole sequence, one uint32 per position.
 */
type PatchRuleSpec =
  | { rule: 'none' }
  /** The binding of [[buffer(buffer)]] moves to offset + 4p: it reads token p. */
  | { rule: 'tokenOffset'; buffer: number }
  /** The uint32 params field(s) at these byte offsets = p. */
  | { rule: 'position'; fields: [number] | [number, number] }
  /** The field(s) = p + 1 (e.g. a KV cache length). */
  | { rule: 'kvLength'; fields: [number] | [number, number] }
  | { rule: 'positionAndKvLength'; position: number; kvLength: number }
  /** The binding moves to offset + 4(p + 1): the kernel writes token p + 1. */
  | { rule: 'argmaxOutput'; buffer: number }
  /**
   * A sampling kernel like md_sample_f16: its output binding as argmaxOutput,
   * and p + 1 into its position field and its history-length field.
   */
  | { rule: 'sampledToken'; buffer: number; position: number; historyCount: number };

/**
 * Every rule but 'none' also takes `ahead` (0 to 16777215, default 0): the
 * command acts for position p + ahead instead of p. A table that evaluates
 * several consecutive tokens per step samples row r with ahead r
 * (speculative verification).
 */
export type PatchSpec = PatchRuleSpec & { ahead?: number };

export interface BufferBindingSpec {
  /** [[buffer(index)]] in the kernel. */
  index: number;
  buffer: GpuBuffer;
  /** Bytes from the start of the buffer; a multiple of 4. Default 0. */
  offset?: number;
}

export interface CommandSpec {
  buffers: BufferBindingSpec[];
  /** Up to 64 bytes passed with setBytes at [[buffer(index)]]. */
  params?: { index: number; bytes: ArrayBufferView };
  /** Default 1. */
  threadgroups?: number;
  /** A multiple of 32 up to the kernel's maximum. Default 32. */
  threadsPerThreadgroup?: number;
  /** Bytes of [[threadgroup(0)]] memory: a multiple of 16, at most 32768 (Metal's rules). Default 0. */
  threadgroupMemory?: number;
  /** Default { rule: 'none' }. */
  patch?: PatchSpec;
  /** For errors and profiling. Default: the kernel name and the command's index. */
  label?: string;
}

const COMMAND_KEYS = new Set(['buffers', 'params', 'threadgroups', 'threadsPerThreadgroup', 'threadgroupMemory', 'patch', 'label']);

/** Records commands, then build()s a DispatchTable for one device. */
export class DispatchTableBuilder {
  readonly #device: GpuDevice;
  readonly #commands: NativeCommand[] = [];
  #kernels: Set<string> | undefined;

  constructor(device: GpuDevice) {
    this.#device = device;
  }

  /** Appends a dispatch of `kernel`; throws TypeError/RangeError naming the field. */
  add(kernel: string, spec: CommandSpec): this {
    const at = `commands[${this.#commands.length}]`;
    this.#kernels ??= new Set(this.#device.kernelNames());
    if (typeof kernel !== 'string') throw invalidParameterError(`${at}.kernel`, 'a kernel name', kernel, 'type');
    if (!this.#kernels.has(kernel)) {
      throw invalidParameterError(`${at}.kernel`, `one of the device's kernels (${[...this.#kernels].join(', ')})`, kernel, 'range');
    }
    if (!isPlainObject(spec)) throw invalidParameterError(at, 'an object', spec, 'type');
    for (const key of Object.keys(spec)) {
      if (!COMMAND_KEYS.has(key)) throw new TypeError(`Unknown option ${at}.${key}; the options are: ${[...COMMAND_KEYS].join(', ')}`);
    }
    const layouts = this.#device.addon.layouts;
    const label = spec.label ?? `${kernel} #${this.#commands.length}`;
    if (typeof label !== 'string') throw invalidParameterError(`${at}.label`, 'a string', label, 'type');

    const params = spec.params === undefined ? undefined : this.#params(`${at}.params`, spec.params, layouts.maxInlineParams);
    const buffers = this.#buffers(`${at}.buffers`, spec.buffers, params?.index, layouts.maxCommandBuffers);
    const maxThreads = this.#device.maxThreadsPerThreadgroup(kernel);
    const threads = count(`${at}.threadsPerThreadgroup`, spec.threadsPerThreadgroup, 32, 32, maxThreads);
    if (threads % 32 !== 0) {
      throw invalidParameterError(`${at}.threadsPerThreadgroup`, `a multiple of 32 from 32 to ${maxThreads}`, threads, 'range');
    }
    const memory = count(`${at}.threadgroupMemory`, spec.threadgroupMemory, 0, 0, layouts.maxThreadgroupMemory);
    if (memory % layouts.threadgroupMemoryAlignment !== 0) {
      throw invalidParameterError(
        `${at}.threadgroupMemory`,
        `a multiple of ${layouts.threadgroupMemoryAlignment} bytes from 0 to ${layouts.maxThreadgroupMemory} (Metal's rule)`,
        memory,
        'range',
      );
    }
    const command: NativeCommand = {
      kernel,
      label,
      buffers,
      params: params?.bytes ?? null,
      paramsIndex: params?.index ?? 0,
      threadgroups: count(`${at}.threadgroups`, spec.threadgroups, 1, 1, 0xffffffff),
      threadsPerThreadgroup: threads,
      threadgroupMemory: memory,
      patch: this.#patch(`${at}.patch`, spec.patch ?? { rule: 'none' }, buffers, params?.bytes.byteLength ?? 0),
    };
    this.#commands.push(command);
    return this;
  }

  /** The table, recorded in the addon. The builder can go on adding and build again. */
  build(): DispatchTable {
    return new DispatchTable(this.#device, this.#device.native.createTable(this.#commands.map((c) => ({ ...c }))));
  }

  #params(at: string, params: unknown, max: number): { index: number; bytes: Uint8Array } {
    if (!isPlainObject(params)) throw invalidParameterError(at, 'an object { index, bytes }', params, 'type');
    const index = bufferIndex(`${at}.index`, params.index, this.#device.addon.layouts.maxBufferIndex);
    const view = params.bytes;
    if (!ArrayBuffer.isView(view)) throw invalidParameterError(`${at}.bytes`, 'a typed array or DataView', view, 'type');
    if (view.byteLength === 0 || view.byteLength > max) {
      throw invalidParameterError(`${at}.bytes`, `1 to ${max} bytes`, `${view.byteLength} bytes`, 'range');
    }
    return { index, bytes: new Uint8Array(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength)) };
  }

  #buffers(at: string, specs: unknown, paramsIndex: number | undefined, max: number): NativeCommand['buffers'] {
    if (!Array.isArray(specs)) throw invalidParameterError(at, 'an array of { index, buffer, offset }', specs, 'type');
    if (specs.length > max) throw invalidParameterError(at, `at most ${max} buffers`, specs, 'range');
    const seen = new Set<number>();
    return specs.map((spec: unknown, i) => {
      const where = `${at}[${i}]`;
      if (!isPlainObject(spec)) throw invalidParameterError(where, 'an object { index, buffer, offset }', spec, 'type');
      const index = bufferIndex(`${where}.index`, spec.index, this.#device.addon.layouts.maxBufferIndex);
      if (seen.has(index)) throw invalidParameterError(`${where}.index`, 'an index no other buffer of the command uses', index, 'range');
      if (index === paramsIndex) throw invalidParameterError(`${where}.index`, 'an index the params do not use', index, 'range');
      seen.add(index);
      const buffer = spec.buffer;
      if (!(buffer instanceof GpuBuffer)) throw invalidParameterError(`${where}.buffer`, 'a GpuBuffer', buffer, 'type');
      if (buffer.device !== this.#device) throw new TypeError(`${where}.buffer belongs to another device`);
      const offset = spec.offset ?? 0;
      if (!isInteger(offset)) throw invalidParameterError(`${where}.offset`, 'an integer', offset, 'type');
      if (offset < 0 || offset % 4 !== 0 || offset >= buffer.byteLength) {
        throw invalidParameterError(`${where}.offset`, `a multiple of 4 from 0 to ${buffer.byteLength - 1} (inside the buffer)`, offset, 'range');
      }
      return { index, buffer: buffer.native, offset };
    });
  }

  #patch(at: string, spec: unknown, buffers: NativeCommand['buffers'], paramsBytes: number): NativeCommand['patch'] {
    const rules = this.#device.addon.patchRules;
    const none = this.#device.addon.layouts.noField;
    if (!isPlainObject(spec)) throw invalidParameterError(at, 'an object { rule, ... }', spec, 'type');
    const rule = spec.rule;
    if (typeof rule !== 'string' || !(rule in rules)) {
      throw invalidParameterError(
        `${at}.rule`,
        `one of ${Object.keys(rules)
          .map((r) => `'${r}'`)
          .join(', ')}`,
        rule,
        typeof rule === 'string' ? 'range' : 'type',
      );
    }
    const allowed: Record<PatchRuleName, string[]> = {
      none: [],
      tokenOffset: ['buffer'],
      argmaxOutput: ['buffer'],
      position: ['fields'],
      kvLength: ['fields'],
      positionAndKvLength: ['position', 'kvLength'],
      sampledToken: ['buffer', 'position', 'historyCount'],
    };
    const keys = allowed[rule as PatchRuleName];
    if (rule !== 'none') keys.push('ahead');
    for (const key of Object.keys(spec)) {
      if (key !== 'rule' && !keys.includes(key))
        throw new TypeError(`Unknown option ${at}.${key} for rule '${rule}'; it takes: ${['rule', ...keys].join(', ')}`);
    }
    const boundBuffer = (): number => {
      const index = bufferIndex(`${at}.buffer`, spec.buffer, this.#device.addon.layouts.maxBufferIndex);
      if (!buffers.some((b) => b.index === index))
        throw invalidParameterError(`${at}.buffer`, 'the index of a buffer the command binds', index, 'range');
      return index;
    };
    const field = (name: string, value: unknown): number => {
      if (!isInteger(value)) throw invalidParameterError(name, 'a byte offset in the params', value, 'type');
      if (value < 0 || value % 4 !== 0 || value + 4 > paramsBytes) {
        throw invalidParameterError(name, `a multiple of 4 with 4 bytes inside the ${paramsBytes} bytes of params`, value, 'range');
      }
      return value;
    };
    let buffer = 0;
    let fields: [number, number] = [none, none];
    if (keys.includes('buffer')) buffer = boundBuffer();
    if (rule === 'position' || rule === 'kvLength') {
      const list = spec.fields;
      if (!Array.isArray(list) || list.length < 1 || list.length > 2) {
        throw invalidParameterError(`${at}.fields`, 'an array of one or two byte offsets', list, 'type');
      }
      fields = [field(`${at}.fields[0]`, list[0]), list.length === 2 ? field(`${at}.fields[1]`, list[1]) : none];
    } else if (rule === 'positionAndKvLength') {
      fields = [field(`${at}.position`, spec.position), field(`${at}.kvLength`, spec.kvLength)];
    } else if (rule === 'sampledToken') {
      fields = [field(`${at}.position`, spec.position), field(`${at}.historyCount`, spec.historyCount)];
    }
    const maxAhead = this.#device.addon.layouts.maxPatchAhead;
    const ahead = spec.ahead ?? 0;
    if (!isInteger(ahead)) throw invalidParameterError(`${at}.ahead`, `an integer from 0 to ${maxAhead}`, ahead, 'type');
    if (ahead < 0 || ahead > maxAhead) throw invalidParameterError(`${at}.ahead`, `an integer from 0 to ${maxAhead}`, ahead, 'range');
    return { rule: rules[rule as PatchRuleName], buffer, fields, ahead };
  }
}

function bufferIndex(name: string, value: unknown, max: number): number {
  if (!isInteger(value)) throw invalidParameterError(name, `an integer from 0 to ${max}`, value, 'type');
  if (value < 0 || value > max) throw invalidParameterError(name, `an integer from 0 to ${max}`, value, 'range');
  return value;
}

function count(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!isInteger(value)) throw invalidParameterError(name, `an integer from ${min} to ${max}`, value, 'type');
  if (value < min || value > max) throw invalidParameterError(name, `an integer from ${min} to ${max}`, value, 'range');
  return value;
}
