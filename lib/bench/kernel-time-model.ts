// kernel-time-model.ts: a decoded token's time on a chip, kernel by kernel,
// from the one-token table's commands and the kernels' counted accesses
// (kernel-counts.ts). Each kernel takes the longest of three times, plus its
// dispatches' own cost:
//   memory  the bytes it must bring from DRAM (the weights as often as its
//           loads fetch them, the KV cache as the attention fetches it) at
//           the chip's published bandwidth;
//   L1      the 128-byte lines its SIMD-group instructions touch, each
//           charged whole, at the L1 rate (apple-chips.ts): an uncoalesced
//           load costs its lines however few bytes it uses;
//   ALU     the lane operations its arithmetic takes (alu-counts.ts: counted
//           from clang's IR of the kernels' steps) at the
//           chip's rate (apple-chips.ts); the matrix-vector kernels per
//           weight byte, the attention per cached position (each SIMD
//           group's 32 lanes per position of its KV head, for each pass of
//           up to attentionGroup query heads);
//   dispatches  DISPATCH_US each.
// The row kernels (norms, RoPE, the KV store, adds, the embedding row,
// the attention merge, a mixture of experts' choice and weighted sum) move
// a few KB of activations each: their time is their dispatches'. The
// indexed matrix-vector kernels (md_matvec_id_*) read the chosen experts'
// share of their stacked tensors, at the plain kernel's counts per byte.
import type { NativeRecordedCommand } from '../native/contract.js';
import { aluOpsPerSecond, DISPATCH_US, l1BytesPerSecond, type AppleChip } from './apple-chips.js';
import type { KernelCounts } from './kernel-counts.js';

/** One kernel's share of a token, summed over its dispatches. */
export interface KernelCost {
  /** The kernel's name; the fused LM head and pick as 'LM head + pick (<type>)'; the row kernels together. */
  kernel: string;
  dispatches: number;
  /** Bytes from DRAM. */
  memoryBytes: number;
  /** 128-byte lines its instructions touch in L1. */
  l1Lines: number;
  /** Lane operations of its arithmetic (0 where not counted). */
  aluOps: number;
}

export type Limit = 'memory' | 'L1 lines' | 'ALU' | 'dispatches';

export interface KernelTime extends KernelCost {
  memoryUs: number;
  l1Us: number;
  aluUs: number;
  dispatchUs: number;
  /** max(memoryUs, l1Us, aluUs) + dispatchUs */
  us: number;
  /** The largest of the four. */
  binds: Limit;
}

export const ROW_KERNELS = 'row kernels (norms, RoPE, KV store, adds, embedding, merge)';

export interface TokenShape {
  headCount: number;
  headCountKv: number;
  headDim: number;
  /** Positions the token attends to (its own included). */
  context: number;
  /** A tensor's bytes, by GGUF name. */
  tensorBytes: (name: string) => number;
  /** The share of a stacked experts' tensor a token reads (experts used / experts): the indexed kernels read that much. */
  expertShare: number;
  /** The fused head: its tensor's kernel suffix and bytes, and the dispatches it adds. */
  head?: { suffix: string; bytes: number; dispatches: number };
}

/** One lane's ALU operations per weight byte of a matrix-vector kernel, by type suffix, for `tokens` rows of x (the batch form's 1 to 8). */
export type MatvecOpsPerByte = (suffix: string, tokens: number) => number;
/** One lane's ALU operations per cached position of the attention, for a pass of `heads` query heads. */
export type AttentionOpsPerPosition = (heads: number) => number;

export interface ArithmeticModel {
  matvec: MatvecOpsPerByte;
  attention: AttentionOpsPerPosition;
  /** Query heads per pass of the attention (MD_ATTENTION_GROUP). */
  attentionGroup: number;
  /** Where md_matvec_params keeps its token rows: the batch form's arithmetic is charged per row. */
  matvecCountByte: number;
}

// Lanes of a SIMD group: each runs the attention's per-position steps.
const SIMD_WIDTH = 32;

function matvecCost(counts: KernelCounts, opsPerByte: MatvecOpsPerByte, kernel: string, suffix: string, weightBytes: number, tokens = 1): KernelCost {
  const c = counts.matvec.types[suffix];
  if (c === undefined)
    throw new Error(`${kernel}: bench/kernel-counts.json has no counts for the '${suffix}' matrix-vector kernel; record them again`);
  return {
    kernel,
    dispatches: 1,
    memoryBytes: (weightBytes * c.weightBytesFetched) / c.weightBytes,
    l1Lines: (weightBytes * (c.linesLoaded + c.linesStored)) / c.weightBytes,
    aluOps: weightBytes * opsPerByte(suffix, tokens),
  };
}

/** Each kernel's bytes and lines for one token, from its table's commands. */
export function kernelCosts(
  commands: readonly NativeRecordedCommand[],
  shape: TokenShape,
  counts: KernelCounts,
  arithmetic: ArithmeticModel,
): KernelCost[] {
  const opsPerByte = arithmetic.matvec;
  const byKernel = new Map<string, KernelCost>();
  const add = (cost: KernelCost): void => {
    const sum = byKernel.get(cost.kernel);
    if (sum === undefined) byKernel.set(cost.kernel, { ...cost });
    else {
      sum.dispatches += cost.dispatches;
      sum.memoryBytes += cost.memoryBytes;
      sum.l1Lines += cost.l1Lines;
      sum.aluOps += cost.aluOps;
    }
  };
  const a = counts.attention;
  // The attention scales with the cached values it reads: KV heads x positions x dims
  // (counted at 4 query heads per KV head, Llama-3.2-1B's group).
  const attentionUnit = a.kvHeads * a.kvLength * a.headDim;
  for (const command of commands) {
    // md_matvec_id_*: each chosen expert's rows are md_matvec_*'s, so the plain kernel's counts per weight byte.
    const matvec = /^md_matvec_(batch_|id_)?(.+)$/.exec(command.kernel);
    if (matvec !== null) {
      const tensors = new Set(command.buffers.filter((b) => b.buffer.startsWith('tensor:')).map((b) => b.buffer.slice('tensor:'.length)));
      const share = matvec[1] === 'id_' ? shape.expertShare : 1;
      const weightBytes = [...tensors].reduce((sum, name) => sum + shape.tensorBytes(name) * share, 0);
      // The batch form reads the weights once for its rows of x (md_matvec_params' count).
      const tokens =
        matvec[1] === 'batch_'
          ? new DataView(command.params.bytes.buffer, command.params.bytes.byteOffset).getUint32(arithmetic.matvecCountByte, true)
          : 1;
      add(matvecCost(counts, opsPerByte, command.kernel, matvec[2]!, weightBytes, tokens));
    } else if (command.kernel === a.kernel) {
      const unit = shape.headCountKv * shape.context * shape.headDim;
      // Each KV head's positions once per pass of up to attentionGroup of its query heads.
      const group = shape.headCount / shape.headCountKv;
      let perPosition = 0;
      for (let done = 0; done < group; done += arithmetic.attentionGroup)
        perPosition += arithmetic.attention(Math.min(arithmetic.attentionGroup, group - done));
      add({
        kernel: command.kernel,
        dispatches: 1,
        memoryBytes: (unit * a.kvBytesFetched) / attentionUnit,
        l1Lines: (unit * (a.linesLoaded + a.linesStored)) / attentionUnit,
        aluOps: shape.headCountKv * shape.context * SIMD_WIDTH * perPosition,
      });
    } else if (command.kernel.startsWith('md_attention_') && command.kernel !== 'md_attention_merge_f32') {
      throw new Error(`${command.kernel}: only ${a.kernel}'s counts are recorded (bench predict models the F16 cache)`);
    } else {
      add({ kernel: ROW_KERNELS, dispatches: 1, memoryBytes: 0, l1Lines: 0, aluOps: 0 });
    }
  }
  if (shape.head !== undefined) {
    const head = matvecCost(counts, opsPerByte, `LM head + pick (${shape.head.suffix})`, shape.head.suffix, shape.head.bytes);
    add({ ...head, dispatches: shape.head.dispatches });
  }
  return [...byKernel.values()];
}

/** The kernels' times on `chip`, in the order given. */
export function kernelTimes(costs: readonly KernelCost[], chip: AppleChip, lineBytes: number): KernelTime[] {
  return costs.map((c) => {
    const memoryUs = (1e6 * c.memoryBytes) / (chip.gbPerSecond * 1e9);
    const l1Us = (1e6 * c.l1Lines * lineBytes) / l1BytesPerSecond(chip);
    const aluUs = (1e6 * c.aluOps) / aluOpsPerSecond(chip);
    const dispatchUs = c.dispatches * DISPATCH_US;
    const longest = Math.max(memoryUs, l1Us, aluUs);
    const binds: Limit = dispatchUs > longest ? 'dispatches' : longest === memoryUs ? 'memory' : longest === l1Us ? 'L1 lines' : 'ALU';
    return { ...c, memoryUs, l1Us, aluUs, dispatchUs, us: longest + dispatchUs, binds };
  });
}
