// errors.ts: the errors the public API throws.

/** Any function: the frame a stack trace starts above. */
export type AnyFunction = (...args: never[]) => unknown;

function describe(actual: unknown): string {
  if (typeof actual === 'string') return `${JSON.stringify(actual)} (string)`;
  if (typeof actual === 'number') return `${Object.is(actual, -0) ? '-0' : String(actual)} (number)`;
  if (actual === null) return 'null';
  if (Array.isArray(actual)) return `an array of length ${actual.length}`;
  if (ArrayBuffer.isView(actual)) return `a ${actual.constructor.name}`;
  if (typeof actual === 'object') return `an object (${(actual as object).constructor?.name ?? 'null prototype'})`;
  return `${String(actual)} (${typeof actual})`;
}

/**
 * The one shape of every option error: names the option, what was expected
 * and what was received. A value of the wrong type is a TypeError; a value
 * of the right type outside its range is a RangeError.
 */
export function invalidParameterError(name: string, expected: string, actual: unknown, kind: 'type' | 'range'): Error {
  const message = `Expected ${expected} for ${name} but received ${describe(actual)}`;
  return kind === 'type' ? new TypeError(message) : new RangeError(message);
}

/** Thrown when every logit is -Infinity (after logitBias, tokenBias and penalties): no token can be sampled. */
export class NoTokenError extends Error {
  readonly code = 'ERR_MD_NO_TOKEN';
  constructor() {
    super('Every logit is -Infinity after logitBias, tokenBias and penalties: no token can be sampled');
    this.name = 'NoTokenError';
  }
}

/** Thrown when a backend asked for by name cannot run here; `reason` says why. */
export class BackendUnavailableError extends Error {
  readonly code = 'ERR_MD_BACKEND_UNAVAILABLE';
  constructor(
    readonly backend: string,
    readonly reason: string,
  ) {
    super(`The ${backend} backend is not available: ${reason}`);
    this.name = 'BackendUnavailableError';
  }
}

/**
 * Re-throws an error from the native addon as the same class with the
 * caller's JS stack, so a stack trace points at the user's code, not at the
 * binding (the native frames carry nothing useful).
 */
export function rethrowWithCallerStack(error: unknown, caller: AnyFunction): never {
  if (!(error instanceof Error)) throw error;
  const rethrown = sameClass(error);
  Error.captureStackTrace(rethrown, caller);
  throw rethrown;
}

/** The stack above `caller`, kept for an error that arrives after an await. */
export function callerStack(caller: AnyFunction): string {
  const holder: { stack?: string } = {};
  Error.captureStackTrace(holder, caller);
  return (holder.stack ?? '').split('\n').slice(1).join('\n');
}

/** rethrowWithCallerStack for asynchronous work: `stack` from callerStack(). */
export function rethrowWithStack(error: unknown, stack: string): never {
  if (!(error instanceof Error)) throw error;
  const rethrown = sameClass(error);
  rethrown.stack = `${rethrown.name}: ${rethrown.message}\n${stack}`;
  throw rethrown;
}

function sameClass(error: Error): Error {
  const Ctor = error instanceof RangeError ? RangeError : error instanceof TypeError ? TypeError : Error;
  return new Ctor(error.message, { cause: error });
}

/**
 * Thrown (rejected) when a generation's AbortSignal is aborted and
 * stopOnAbortSignal is not set. Like Node's own AbortError: name
 * 'AbortError', code 'ABORT_ERR', the signal's reason as `cause`.
 */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(reason?: unknown, message = 'The generation was aborted') {
    super(message, reason === undefined ? undefined : { cause: reason });
    this.name = 'AbortError';
  }
}

/** Thrown when a Session is used by a second generation while one runs, or disposed while one runs. */
export class SessionBusyError extends Error {
  readonly code = 'ERR_MD_SESSION_BUSY';
  constructor(message: string) {
    super(message);
    this.name = 'SessionBusyError';
  }
}

/** `value` when it is an integer from min to max, else the TypeError / RangeError naming `name`. */
export function integerInRange(name: string, value: unknown, min: number, max: number): number {
  const expected = `an integer from ${min} to ${max}`;
  if (!Number.isInteger(value)) throw invalidParameterError(name, expected, value, 'type');
  if ((value as number) < min || (value as number) > max) throw invalidParameterError(name, expected, value, 'range');
  return value as number;
}
