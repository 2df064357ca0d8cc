// transformer-params.ts: the transformer kernels' params blocks, packed at
// the byte offsets the addon reports (one definition of the layouts:
// metal/md_transformer.h). `count` is the batch: 1 for a decode step, the
// tokens of a prefill batch otherwise.
import type { NativeTransformerLayouts } from '../native/contract.js';

export interface RopeShape {
  headDim: number;
  ropeDims: number;
  mode: number;
  thetaScale: number;
  freqScale: number;
  hasFactors: boolean;
}

export interface AttentionShape {
  heads: number;
  kvHeads: number;
  headDim: number;
  context: number;
  scale: number;
  splits: number;
}

export class ParamsPacker {
  constructor(readonly l: NativeTransformerLayouts) {}

  #pack(size: number, ints: [number, number][], floats: [number, number][] = []): Uint8Array {
    const view = new DataView(new ArrayBuffer(size));
    for (const [offset, value] of ints) view.setUint32(offset, value, true);
    for (const [offset, value] of floats) view.setFloat32(offset, value, true);
    return new Uint8Array(view.buffer);
  }

  /** `rows` rows of n; broadcast: md_add_f32 adds one row of n to each. */
  rows(n: number, rows: number, eps: number, broadcast = false): Uint8Array {
    const r = this.l.rows;
    return this.#pack(r.size, [[r.n, n], [r.rows, rows], [r.broadcast, broadcast ? 1 : 0]], [[r.eps, eps]]);
  }

  /** Up to three matrices' rows over the same x; mode: y = W x, y += W x (a residual add fused in), or SwiGLU of two. */
  matvec(rows: readonly number[], cols: number, mode: keyof NativeTransformerLayouts['matvecModes'] = 'store', count = 1): Uint8Array {
    const m = this.l.matvec;
    return this.#pack(m.size, [
      [m.cols, cols], [m.mode, this.l.matvecModes[mode]], [m.count, count], ...rows.map((r, i): [number, number] => [m.rows + 4 * i, r]),
    ]);
  }

  matmul(rows: number, cols: number, count: number, accumulate = false): Uint8Array {
    const m = this.l.matmul;
    return this.#pack(m.size, [[m.rows, rows], [m.cols, cols], [m.count, count], [m.accumulate, accumulate ? 1 : 0]]);
  }

  embed(vocabSize: number, dim: number, count: number): Uint8Array {
    const e = this.l.embed;
    return this.#pack(e.size, [[e.vocabSize, vocabSize], [e.dim, dim], [e.count, count]]);
  }

  /** Q's `heads` heads and K's `kHeads` heads in one dispatch. */
  rope(heads: number, kHeads: number, shape: RopeShape, count: number): Uint8Array {
    const r = this.l.rope;
    return this.#pack(r.size, [[r.heads, heads], [r.kHeads, kHeads], [r.headDim, shape.headDim], [r.ropeDims, shape.ropeDims], [r.mode, shape.mode],
      [r.hasFactors, shape.hasFactors ? 1 : 0], [r.count, count]], [[r.thetaScale, shape.thetaScale], [r.freqScale, shape.freqScale]]);
  }

  kvStore(kvDim: number, count: number): Uint8Array {
    const k = this.l.kvStore;
    return this.#pack(k.size, [[k.kvDim, kvDim], [k.count, count]]);
  }

  attention(shape: AttentionShape, count: number): Uint8Array {
    const a = this.l.attention;
    return this.#pack(a.size, [[a.heads, shape.heads], [a.kvHeads, shape.kvHeads], [a.headDim, shape.headDim], [a.context, shape.context],
      [a.count, count], [a.splits, shape.splits]], [[a.scale, shape.scale]]);
  }
}
