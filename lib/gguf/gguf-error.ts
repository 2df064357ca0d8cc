// gguf-error.ts: the one error a GGUF file that cannot be loaded gives.

/**
 * Thrown by loadModel when a file is missing, truncated, malformed or not a
 * model this package runs. Names the file and the field (a metadata key, a
 * tensor, or "header") and says what was wrong.
 */
export class GgufError extends Error {
  readonly code = 'ERR_MD_GGUF';
  readonly field: string;
  readonly detail: string;
  constructor(
    readonly file: string,
    field: string,
    detail: string,
  ) {
    // A name or value from the file (a 64 KB tensor name, say) is cut, not echoed whole.
    const [shownField, shownDetail] = [shorten(field, FIELD_CHARS), shorten(detail, DETAIL_CHARS)];
    super(`${file}: ${shownField}: ${shownDetail}`);
    this.name = 'GgufError';
    this.field = shownField;
    this.detail = shownDetail;
  }
}

const FIELD_CHARS = 200;
const DETAIL_CHARS = 1000;

function shorten(text: string, most: number): string {
  return text.length <= most ? text : `${text.slice(0, most)}... (${text.length} characters)`;
}

/** A metadata value as a message shows it: any type the file may hold (a u64 is a bigint), a long one cut. */
export function describeMetadataValue(value: unknown): string {
  if (value === undefined) return 'missing';
  if (typeof value === 'string') return shorten(JSON.stringify(value), 100);
  if (typeof value === 'bigint') return `${value} (an integer)`;
  if (Array.isArray(value)) return `an array of ${value.length} values`;
  return `${String(value)} (${typeof value})`;
}

/** The detail for a metadata value outside the supported set. */
export function unsupportedValue(value: unknown, supported: readonly string[]): string {
  const list = `(supported: ${supported.join(', ')})`;
  return value === undefined ? `missing ${list}` : `${describeMetadataValue(value)} is not supported ${list}`;
}
