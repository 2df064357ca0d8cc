// grammar-error.ts: the error of a grammar the engine refused or could not
// compile in time. Its fields cross from a grammar's thread intact.

/** The grammar engine refused a grammar, failed, or ran past a limit; `reason` is what happened. */
export class GrammarError extends Error {
  readonly code = 'ERR_MD_GRAMMAR';
  /** What was being done: which part of the grammar was refused, or compiled. */
  readonly what: string;
  constructor(
    what: string,
    readonly reason: string,
  ) {
    super(`${what}: ${reason}`);
    this.name = 'GrammarError';
    this.what = what;
  }
}
