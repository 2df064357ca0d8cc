// recorded-commands.ts: a command the addon recorded (recordForward) as a
// table command: its named buffers bound through `bufferNamed`, its
// weights ("tensor:<GGUF name>") to the model's uploaded tensors, and
// where each weight starts in its memory line written into the params.
// One binder for every table of a GGUF model: a sequence's own tables and
// the batched decode tables whose rows are different sequences.
import type { GpuBuffer } from '../gpu/device.js';
import type { CommandSpec } from '../gpu/dispatch-table.js';
import type { NativeRecordedCommand } from '../native/contract.js';
import type { GpuWeights } from './gpu-weights.js';

/** The buffer a recorded command names (not a weight), for `command`: a row's sequence's for a batched step's per-row commands. */
export type BufferResolver = (name: string, command: NativeRecordedCommand) => GpuBuffer;

export function recordedCommandSpec(
  command: NativeRecordedCommand,
  weights: GpuWeights,
  bufferNamed: BufferResolver,
  lineBytes: number,
): CommandSpec {
  const { label, buffers, params, threadgroups, threadsPerThreadgroup, patch, linePhases } = command;
  const bindings = buffers.map(({ index, buffer, offset }) => {
    if (!buffer.startsWith('tensor:')) return { index, buffer: bufferNamed(buffer, command), offset };
    const w = weights.get(buffer.slice('tensor:'.length));
    return { index, buffer: w.buffer, offset: w.offset + offset };
  });
  // Where each weight starts in its memory line, known now that it is bound.
  const bytes = params.bytes.slice();
  for (const { paramsByte, buffer } of linePhases) {
    const binding = bindings.find((b) => b.index === buffer);
    if (binding === undefined) throw new Error(`${label}: recordForward asked for the line phase of buffer ${buffer}, which it does not bind`);
    bytes[paramsByte] = binding.offset % lineBytes;
  }
  return { label, buffers: bindings, params: { ...params, bytes }, threadgroups, threadsPerThreadgroup, ...(patch ? { patch } : {}) };
}
