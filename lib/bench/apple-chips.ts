// apple-chips.ts: the Apple silicon GPUs `bench predict` models, and the
// two figures of the model that are not counted here but taken from
// public measurements or assumed. Each is stated with where it comes from.

export interface AppleChip {
  chip: string;
  /** Memory bandwidth as Apple publishes it, GB/s (10^9 bytes). */
  gbPerSecond: number;
  /** GPU cores. Where a chip comes in two, the larger GPU (as the bandwidth), and a second row for the smaller where a published figure was measured on it. */
  gpuCores: number;
  /** The GPU's highest clock, GHz, as public spec tables report it (Apple does not publish it). */
  gpuGHz: number;
}

export const APPLE_CHIPS: readonly AppleChip[] = [
  { chip: 'M1', gbPerSecond: 68.25, gpuCores: 8, gpuGHz: 1.278 },
  { chip: 'M1 Pro', gbPerSecond: 200, gpuCores: 16, gpuGHz: 1.296 },
  { chip: 'M1 Max', gbPerSecond: 400, gpuCores: 32, gpuGHz: 1.296 },
  { chip: 'M2', gbPerSecond: 100, gpuCores: 10, gpuGHz: 1.398 },
  { chip: 'M2 Pro', gbPerSecond: 200, gpuCores: 19, gpuGHz: 1.398 },
  { chip: 'M2 Max', gbPerSecond: 400, gpuCores: 38, gpuGHz: 1.398 },
  { chip: 'M3', gbPerSecond: 100, gpuCores: 10, gpuGHz: 1.38 },
  { chip: 'M3 Pro', gbPerSecond: 150, gpuCores: 18, gpuGHz: 1.38 },
  { chip: 'M3 Max', gbPerSecond: 400, gpuCores: 40, gpuGHz: 1.38 },
  { chip: 'M4', gbPerSecond: 120, gpuCores: 10, gpuGHz: 1.47 },
  { chip: 'M4 Pro', gbPerSecond: 273, gpuCores: 20, gpuGHz: 1.578 },
  // The binned M4 Pro: akunu's published decode figures were measured on it.
  { chip: 'M4 Pro 16', gbPerSecond: 273, gpuCores: 16, gpuGHz: 1.578 },
  { chip: 'M4 Max', gbPerSecond: 546, gpuCores: 40, gpuGHz: 1.578 },
];

/**
 * What a GPU core's L1 delivers per clock, bytes: 671 GB/s measured on
 * M1's 8 cores at 1.278 GHz (Chips and Cheese, "iGPU Cache Setups
 * Compared, Including M1") is 65.6; taken as 64 on every chip. The model
 * charges it per 128-byte line a SIMD-group instruction touches, which is
 * what the counters count: a load whose 32 lanes touch 13 lines costs 13
 * lines of L1 time however few of their bytes it uses.
 */
export const L1_BYTES_PER_CLOCK_PER_CORE = 64;

/**
 * A dispatch's own cost on the GPU, microseconds: the drain of the one
 * before it and the launch (the table's dispatches depend on each other in
 * order). Assumed, not measured: no Mac runs here. `bench model --backend
 * metal` on a Mac measures the whole token, which calibrates it.
 */
export const DISPATCH_US = 2;

/**
 * A GPU core's arithmetic per clock, lane operations: 128 FP32 ALUs (four
 * SIMD groups of 32), one operation each per clock, a fused multiply-add
 * counted once. Apple's 2.6 TFLOPS for M1's 8-core GPU is 8 x 128 x 2
 * (an FMA's two flops) x 1.278 GHz.
 */
export const ALU_OPS_PER_CLOCK_PER_CORE = 128;

/** Lane operations per second one chip's GPU cores do together. */
export function aluOpsPerSecond(c: AppleChip): number {
  return c.gpuCores * ALU_OPS_PER_CLOCK_PER_CORE * c.gpuGHz * 1e9;
}

/** Bytes per second one chip's GPU L1s deliver together. */
export function l1BytesPerSecond(c: AppleChip): number {
  return c.gpuCores * L1_BYTES_PER_CLOCK_PER_CORE * c.gpuGHz * 1e9;
}
