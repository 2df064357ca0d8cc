// grammar-spec.ts: what a user asks the output to be, checked before the
// grammar engine sees it. One JSON schema, regex or EBNF grammar.
import { invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import { checkEnforcedKeywords } from './schema-keywords.js';

/** A JSON Schema (draft 2020-12 keywords the grammar engine supports; see docs/structured-output.md). */
export type JsonSchema = boolean | { [keyword: string]: unknown };

export type GrammarSpec =
  /** JSON text; with a schema, JSON that validates against it. */
  | { type: 'json'; schema?: JsonSchema }
  /** Text the whole of which matches the regular expression (ECMAScript-like syntax, no flags, no lookaround). */
  | { type: 'regex'; pattern: string }
  /** Text the grammar's root rule derives (XGrammar's EBNF: rule ::= ..., "literals", [classes], * + ? {m,n}). */
  | { type: 'ebnf'; grammar: string; root?: string };

/** A checked spec and the key that identifies it in a model's grammar cache. */
export interface ResolvedGrammarSpec {
  spec: GrammarSpec;
  key: string;
}

const KEYS = { json: ['type', 'schema'], regex: ['type', 'pattern'], ebnf: ['type', 'grammar', 'root'] } as const;

function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidParameterError(name, 'a non-empty string', value, 'type');
  if (value.length === 0) throw invalidParameterError(name, 'a non-empty string', value, 'range');
  return value;
}

export function resolveGrammarSpec(value: unknown, name = 'grammar'): ResolvedGrammarSpec {
  const expected = "{ type: 'json', schema? }, { type: 'regex', pattern } or { type: 'ebnf', grammar, root? }";
  if (!isPlainObject(value)) throw invalidParameterError(name, expected, value, 'type');
  const type = value.type;
  if (type !== 'json' && type !== 'regex' && type !== 'ebnf') throw invalidParameterError(`${name}.type`, "'json', 'regex' or 'ebnf'", type, 'range');
  checkKnownKeys(value, new Set(KEYS[type]), `${name}.`);
  let spec: GrammarSpec;
  if (type === 'json') {
    const schema = value.schema;
    if (schema !== undefined && typeof schema !== 'boolean' && !isPlainObject(schema)) {
      throw invalidParameterError(`${name}.schema`, 'a JSON schema (a plain object or a boolean)', schema, 'type');
    }
    let text: string | undefined;
    try {
      text = schema === undefined ? undefined : JSON.stringify(schema);
    } catch (error) {
      throw invalidParameterError(`${name}.schema`, `a JSON schema that JSON.stringify can write (${(error as Error).message})`, schema, 'range');
    }
    spec = text === undefined ? { type } : { type, schema: JSON.parse(text) as JsonSchema };
    checkEnforcedKeywords(spec.schema, `${name}.schema`);
  } else if (type === 'regex') {
    spec = { type, pattern: nonEmptyString(`${name}.pattern`, value.pattern) };
  } else {
    spec = { type, grammar: nonEmptyString(`${name}.grammar`, value.grammar) };
    if (value.root !== undefined) spec.root = nonEmptyString(`${name}.root`, value.root);
  }
  return { spec, key: JSON.stringify(spec) };
}

/** The option a spec's grammar came from, as errors name it. */
export function grammarField(spec: GrammarSpec): string {
  switch (spec.type) {
    case 'json':
      return spec.schema === undefined ? 'grammar (JSON)' : 'grammar.schema';
    case 'regex':
      return 'grammar.pattern';
    case 'ebnf':
      return 'grammar.grammar';
  }
}
