// reference-forward.ts: the Llama-family forward pass in float64,
// written for clarity, not speed: every weight dequantized, no activation
// rounding, one token at a time with a plain KV list. When the addon and
// llama.cpp disagree, comparing each against this per layer (trace) says
// which op is off.
import { dequantize, TYPE, type TypeName } from './dequantize.js';
import type { GgufTensorSpec } from './gguf-writer.js';
import type { ArchName, ModelShape } from './random-model.js';

const TYPE_NAMES = new Map<number, TypeName>(Object.entries(TYPE).map(([name, id]) => [id, name as TypeName]));

export interface ReferenceOptions {
  arch: ArchName;
  shape: ModelShape;
  ropeBase: number;
  eps: number;
}

class Matrix {
  constructor(
    readonly rows: number,
    readonly cols: number,
    readonly values: Float64Array,
  ) {}
  static of(t: GgufTensorSpec): Matrix {
    const type = TYPE_NAMES.get(t.type)!;
    const rows = t.dims[1] ?? 1;
    return new Matrix(rows, t.dims[0], dequantize(type, t.data as Uint8Array, 0, rows * t.dims[0]));
  }
  row(r: number): Float64Array {
    return this.values.subarray(r * this.cols, (r + 1) * this.cols);
  }
  times(x: Float64Array): Float64Array {
    const y = new Float64Array(this.rows);
    for (let r = 0; r < this.rows; r++) {
      const w = this.row(r);
      let s = 0;
      for (let i = 0; i < this.cols; i++) s += w[i] * x[i];
      y[r] = s;
    }
    return y;
  }
}

function rmsNorm(x: Float64Array, w: Float64Array | undefined, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const scale = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * scale * (w ? w[i] : 1));
}

// The first ropeDims values of the head rotate (pairs i and i + ropeDims / 2
// in qwen's mode); the rest pass through.
function rope(head: Float64Array, position: number, o: ReferenceOptions, factors: Float64Array | undefined): void {
  const dims = o.shape.ropeDims ?? o.shape.headDim,
    pairs = dims / 2;
  for (let i = 0; i < pairs; i++) {
    const angle = (position * Math.pow(o.ropeBase, (-2 * i) / dims)) / (factors ? factors[i] : 1);
    const [a, b] = o.arch === 'llama' ? [2 * i, 2 * i + 1] : [i, i + pairs];
    const x0 = head[a],
      x1 = head[b];
    head[a] = x0 * Math.cos(angle) - x1 * Math.sin(angle);
    head[b] = x0 * Math.sin(angle) + x1 * Math.cos(angle);
  }
}

/** Logits after each token of `tokens`, and each layer's output for the last one. */
export function referenceForward(
  tensors: readonly GgufTensorSpec[],
  o: ReferenceOptions,
  tokens: readonly number[],
): { logits: Float64Array[]; trace: Float64Array[] } {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const get = (name: string) => (byName.has(name) ? Matrix.of(byName.get(name)!) : undefined);
  const vec = (name: string) => get(name)?.values;
  const s = o.shape,
    hd = s.headDim,
    group = s.heads / s.kvHeads;
  const embedding = get('token_embd.weight')!;
  const head = get('output.weight') ?? embedding;
  const factors = vec('rope_freqs.weight');
  const layers = Array.from({ length: s.layers }, (_, l) => {
    const p = `blk.${l}.`;
    return {
      attnNorm: vec(`${p}attn_norm.weight`)!,
      wq: get(`${p}attn_q.weight`)!,
      wk: get(`${p}attn_k.weight`)!,
      wv: get(`${p}attn_v.weight`)!,
      bq: vec(`${p}attn_q.bias`),
      bk: vec(`${p}attn_k.bias`),
      bv: vec(`${p}attn_v.bias`),
      qNorm: vec(`${p}attn_q_norm.weight`),
      kNorm: vec(`${p}attn_k_norm.weight`),
      wo: get(`${p}attn_output.weight`)!,
      ffnNorm: vec(`${p}ffn_norm.weight`)!,
      gate: get(`${p}ffn_gate.weight`)!,
      up: get(`${p}ffn_up.weight`)!,
      down: get(`${p}ffn_down.weight`)!,
      keys: [] as Float64Array[],
      values: [] as Float64Array[],
    };
  });
  const addBias = (x: Float64Array, b?: Float64Array) => (b ? x.map((v, i) => v + b[i]) : x);
  const logits: Float64Array[] = [];
  let trace: Float64Array[] = [];
  tokens.forEach((token, position) => {
    let x: Float64Array = Float64Array.from(embedding.row(token));
    trace = [];
    for (const L of layers) {
      const xn = rmsNorm(x, L.attnNorm, o.eps);
      const q = addBias(L.wq.times(xn), L.bq),
        k = addBias(L.wk.times(xn), L.bk),
        v = addBias(L.wv.times(xn), L.bv);
      const heads = (m: Float64Array, n: number, norm?: Float64Array) =>
        Array.from({ length: n }, (_, h) => {
          let part: Float64Array = m.slice(h * hd, (h + 1) * hd);
          if (norm) part = rmsNorm(part, norm, o.eps);
          rope(part, position, o, factors);
          return part;
        });
      const qh = heads(q, s.heads, L.qNorm),
        kh = heads(k, s.kvHeads, L.kNorm);
      L.keys.push(Float64Array.from(kh.flatMap((h) => [...h])));
      L.values.push(v);
      const attn = new Float64Array(s.heads * hd);
      qh.forEach((qv, h) => {
        const g = Math.floor(h / group);
        const scores = L.keys.map((kr) => {
          let d = 0;
          for (let i = 0; i < hd; i++) d += qv[i] * kr[g * hd + i];
          return d / Math.sqrt(hd);
        });
        const max = Math.max(...scores);
        const e = scores.map((sc) => Math.exp(sc - max));
        const sum = e.reduce((a, b) => a + b, 0);
        L.values.forEach((vr, j) => {
          for (let i = 0; i < hd; i++) attn[h * hd + i] += (e[j] / sum) * vr[g * hd + i];
        });
      });
      const projected = L.wo.times(attn);
      x = x.map((val, i) => val + projected[i]);
      const fn = rmsNorm(x, L.ffnNorm, o.eps);
      const g = L.gate.times(fn),
        u = L.up.times(fn);
      const act = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * u[i]);
      const down = L.down.times(act);
      x = x.map((val, i) => val + down[i]);
      trace.push(x);
    }
    logits.push(head.times(rmsNorm(x, vec('output_norm.weight'), o.eps)));
  });
  return { logits, trace };
}
