// schema-keywords.ts: JSON Schema keywords the grammar engine accepts but
// does not enforce (its grammar is the same with or without them, checked
// against XGrammar 0.1.27's JSON-schema-to-EBNF). A schema that uses one
// would let through output that fails validation: refused by name instead,
// so "valid every time" stays true.
import { invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';

const UNENFORCED = new Map<string, string>([
  ['uniqueItems', 'check the parsed array yourself'],
  ['multipleOf', 'check the parsed number yourself'],
  ['not', 'express it with enum, anyOf or pattern'],
  ['if', 'use anyOf of the cases'],
  ['then', 'use anyOf of the cases'],
  ['else', 'use anyOf of the cases'],
  ['dependentRequired', 'use anyOf of the cases'],
  ['dependentSchemas', 'use anyOf of the cases'],
  ['contains', 'check the parsed array yourself'],
  ['minContains', 'check the parsed array yourself'],
  ['maxContains', 'check the parsed array yourself'],
]);

// Where subschemas are: one schema, a list, or a map of them. Other
// keywords hold values (enum, const, default, examples) and are not walked.
const ONE = ['items', 'additionalProperties', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];
const LIST = ['prefixItems', 'anyOf', 'oneOf', 'allOf'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions'];

/**
 * Subschemas nested deeper than this are refused before the engine: its
 * WebAssembly stack runs out between 50 and 60 levels of objects (a trap,
 * "memory access out of bounds", that can leave the engine's memory in an
 * unknown state), and no schema people write comes near 32.
 */
export const MAX_SCHEMA_DEPTH = 32;

/**
 * Throws a RangeError naming the first keyword the engine would ignore,
 * with what to do instead, or the first subschema nested deeper than
 * MAX_SCHEMA_DEPTH.
 */
export function checkEnforcedKeywords(schema: unknown, path = 'grammar.schema', depth = 0): void {
  if (!isPlainObject(schema)) return;
  if (depth > MAX_SCHEMA_DEPTH) {
    throw invalidParameterError(path, `a subschema nested at most ${MAX_SCHEMA_DEPTH} levels deep (the grammar engine's limit)`, schema, 'range');
  }
  for (const [keyword, value] of Object.entries(schema)) {
    const instead = UNENFORCED.get(keyword);
    if (instead !== undefined) {
      throw invalidParameterError(
        `${path}.${keyword}`,
        `no ${keyword}: the grammar engine does not enforce it, so output could fail your schema (${instead})`,
        value,
        'range',
      );
    }
    if (ONE.includes(keyword)) checkEnforcedKeywords(value, `${path}.${keyword}`, depth + 1);
    else if (LIST.includes(keyword) && Array.isArray(value)) value.forEach((s, i) => checkEnforcedKeywords(s, `${path}.${keyword}[${i}]`, depth + 1));
    else if (MAP.includes(keyword) && isPlainObject(value)) {
      for (const [name, s] of Object.entries(value)) checkEnforcedKeywords(s, `${path}.${keyword}[${JSON.stringify(name)}]`, depth + 1);
    }
  }
}
