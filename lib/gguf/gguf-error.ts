// gguf-error.ts: the one error a GGUF file that cannot be loaded gives.

/**
 * Thrown by loadModel when a file is missing, truncated, malformed or not a
 * model this package runs. Names the file and the field (a metadata key, a
 * tensor, or "header") and says what was wrong.
 */
export class GgufError extends Error {
  readonly code = 'ERR_MD_GGUF';
  constructor(readonly file: string, readonly field: string, readonly detail: string) {
    super(`${file}: ${field}: ${detail}`);
    this.name = 'GgufError';
  }
}
