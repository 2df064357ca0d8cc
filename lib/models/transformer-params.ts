// transformer-params.ts: md_rows_params, packed at the byte offsets the
// addon reports (metal/md_transformer.h), for the commands TypeScript adds
// after a recorded forward pass (the logits to float16). The forward
// pass's own params are filled natively (native/core/graph/table_recorder.cpp).
import type { NativeTransformerLayouts } from '../native/contract.js';

/** `rows` rows of n values (eps 0: no norm reads it). */
export function rowsParams(layouts: NativeTransformerLayouts, n: number, rows: number): Uint8Array {
  const r = layouts.rows;
  const view = new DataView(new ArrayBuffer(r.size));
  view.setUint32(r.n, n, true);
  view.setUint32(r.rows, rows, true);
  return new Uint8Array(view.buffer);
}
