// chat-functions.ts: functions a ChatSession's model may call, shaped as
// node-llama-cpp's: a description, a JSON schema of the parameters (an
// object), and a handler that gets them parsed and checked by the grammar
// that constrained the call.
import { invalidParameterError } from '../errors.js';
import type { JsonSchema } from '../grammar/grammar-spec.js';
import type { SchemaType } from '../grammar/schema-type.js';
import { isPlainObject } from '../predicates.js';

export interface ChatSessionFunction<Params = unknown> {
  description?: string;
  /** A JSON schema of type 'object'; none: the function takes no parameters. */
  params?: JsonSchema;
  handler(params: Params): unknown;
}

// The handler's parameter type varies per function; a record of them is checked at definition.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ChatSessionFunctions = Readonly<Record<string, ChatSessionFunction<any>>>;

/**
 * A function with its handler's parameters typed from its schema (write
 * the schema inline, or `as const`): node-llama-cpp's
 * defineChatSessionFunction.
 */
export function defineChatSessionFunction<const S extends JsonSchema | undefined = undefined, R = unknown>(fn: {
  description?: string;
  params?: S;
  handler(params: S extends undefined ? Record<string, never> : SchemaType<S>): R;
}): ChatSessionFunction<S extends undefined ? Record<string, never> : SchemaType<S>> {
  return fn as ChatSessionFunction<S extends undefined ? Record<string, never> : SchemaType<S>>;
}

/** A name a model can write for a function: letters, digits, _ . - (64 at most, not starting with a digit). */
export const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/** The functions option, checked: names a model can write, handlers, object schemas. */
export function checkFunctions(value: unknown): ChatSessionFunctions | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) throw invalidParameterError('functions', 'an object of functions by name', value, 'type');
  const names = Object.keys(value);
  if (names.length === 0) return undefined;
  for (const name of names) {
    const where = `functions.${name}`;
    if (!FUNCTION_NAME.test(name))
      throw invalidParameterError('functions', 'function names of letters, digits, _ . - (64 at most, not starting with a digit)', name, 'range');
    const fn = value[name];
    if (!isPlainObject(fn)) throw invalidParameterError(where, 'a function definition ({ description?, params?, handler })', fn, 'type');
    if (typeof fn.handler !== 'function') throw invalidParameterError(`${where}.handler`, 'a function', fn.handler, 'type');
    if (fn.description !== undefined && typeof fn.description !== 'string')
      throw invalidParameterError(`${where}.description`, 'a string', fn.description, 'type');
    const params = fn.params;
    if (params !== undefined && (!isPlainObject(params) || (params.type !== undefined && params.type !== 'object'))) {
      throw invalidParameterError(`${where}.params`, "a JSON schema of type 'object'", params, 'type');
    }
  }
  return value as ChatSessionFunctions;
}

/** The schema of a function's parameters as the grammar takes it: an object, with none when it has no schema. */
export function paramsSchema(fn: ChatSessionFunction): JsonSchema {
  return fn.params === undefined ? { type: 'object', properties: {}, additionalProperties: false } : { type: 'object', ...(fn.params as object) };
}

/** The functions as chat templates take them (the `tools` variable, OpenAI's shape). */
export function templateTools(functions: ChatSessionFunctions): unknown[] {
  return Object.entries(functions).map(([name, fn]) => ({
    type: 'function',
    function: { name, ...(fn.description !== undefined && { description: fn.description }), parameters: paramsSchema(fn) },
  }));
}
