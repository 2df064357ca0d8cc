// predicates.ts: small checks the option validators are built from.

export const UINT32_MAX = 0xffffffff;

export const isNumber = (x: unknown): x is number => typeof x === 'number';
export const isInteger = (x: unknown): x is number => Number.isInteger(x);
export const isUint32 = (x: unknown): x is number => isInteger(x) && (x as number) >= 0 && (x as number) <= UINT32_MAX;
export const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' &&
  x !== null &&
  !Array.isArray(x) &&
  !ArrayBuffer.isView(x) &&
  (Object.getPrototypeOf(x) === Object.prototype || Object.getPrototypeOf(x) === null);
/** A number whose float32 conversion (what every backend uses) is finite. */
export const isFiniteFloat32 = (x: unknown): x is number => isNumber(x) && Number.isFinite(Math.fround(x));
