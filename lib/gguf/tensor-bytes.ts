// tensor-bytes.ts: the bytes a GGUF tensor of `type` and `dims` (ne[0]
// first) takes: whole blocks of each row, rows one after another.
import type { NativeTensorType } from '../native/contract.js';

export function tensorBytes(type: NativeTensorType, dims: readonly number[]): number {
  const [cols, ...rest] = dims;
  return rest.reduce((a, b) => a * b, 1) * Math.ceil(cols / type.blockValues) * type.blockBytes;
}
