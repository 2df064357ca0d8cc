// grammar.test.ts: structured output with XGrammar on a model with Qwen 3's
// real vocabulary. For each schema, seed and sampling setting, the output
// is complete (stopReason 'grammarComplete'), parses and validates with
// Ajv (a JSON Schema validator of its own, not the engine that made the
// grammar); regex and EBNF outputs match; a grammar the engine refuses is a
// GrammarError in its words; a spec is compiled once per model.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';

import {
  ChatSession,
  createGrammar,
  generate,
  GrammarError,
  loadModel,
  Session,
  type GenerateOptions,
  type GgufModel,
  type JsonSchema,
} from '../lib/index.js';
import { seededRandom } from '../lib/bench/logit-rows.js';
import { GrammarThread } from '../lib/grammar/grammar-thread.js';
import { biasTowards, grammarModel } from './grammar-model.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';

const dir = mkdtempSync(join(tmpdir(), 'md-grammar-'));
let model: GgufModel;
let endValues: Record<string, number>;
beforeAll(async () => {
  model = await grammarModel(dir);
  endValues = biasTowards(model, '"\\,}]', 5);
});
afterAll(() => {
  model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

// A model with the synthetic 300-token vocabulary.
async function tinyModel(): Promise<GgufModel> {
  const path = join(dir, 'tiny.gguf');
  await writeRandomModel(path, variantSpec('qwen3', 'Q8_0', 2));
  return loadModel(path, { threads: 1 });
}

const SCHEMAS: Record<string, JsonSchema> = {
  'nested objects': {
    type: 'object',
    properties: {
      user: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          address: {
            type: 'object',
            properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
            required: ['city', 'zip'],
          },
        },
        required: ['name', 'address'],
      },
    },
    required: ['user'],
  },
  arrays: {
    type: 'object',
    properties: {
      items: {
        type: 'array',
        items: { type: 'object', properties: { id: { type: 'integer' }, ok: { type: 'boolean' } }, required: ['id', 'ok'] },
        minItems: 1,
        maxItems: 3,
      },
    },
    required: ['items'],
  },
  enums: {
    type: 'object',
    properties: { color: { enum: ['red', 'green', 'blue'] }, size: { type: 'string', enum: ['S', 'M', 'L'] }, level: { enum: [1, 2, null] } },
    required: ['color', 'size', 'level'],
  },
  numbers: {
    type: 'object',
    properties: { x: { type: 'number' }, n: { type: 'integer', minimum: -10, maximum: 10 }, big: { type: 'integer' } },
    required: ['x', 'n', 'big'],
  },
  'strings with escapes': {
    type: 'object',
    properties: { text: { type: 'string' }, quote: { type: 'string' } },
    required: ['text', 'quote'],
  },
  'optional fields': {
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'integer' }, c: { type: 'boolean' } },
    required: ['a'],
  },
};

const SETTINGS: Record<string, GenerateOptions> = {
  'temperature 1': { temperature: 1 },
  'top-k 40, top-p 0.9, temperature 0.8': { temperature: 0.8, topK: 40, topP: 0.9 },
  'min-p 0.02, penalties, temperature 1.3': { temperature: 1.3, minP: 0.02, repeatPenalty: { penalty: 1.2, presencePenalty: 0.5 } },
};
const SEEDS = [1, 2, 3];

describe.each(Object.entries(SCHEMAS))('JSON schema: %s', (name, schema) => {
  const ajv = new Ajv({ strict: false });
  test(`every output of ${SEEDS.length} seeds x ${Object.keys(SETTINGS).length} settings is complete, parses and validates`, async () => {
    const grammar = await model.createGrammarForJsonSchema(schema);
    const validate = ajv.compile(schema as object);
    const texts: string[] = [];
    for (const settings of Object.values(SETTINGS)) {
      for (const seed of SEEDS) {
        const result = await generate(model, 'Answer in JSON:', {
          ...settings,
          seed,
          grammar,
          logitBias: endValues,
          maxTokens: 400,
          backend: 'native',
          contextSize: 512,
        });
        expect(result.stopReason, result.text).toBe('grammarComplete');
        expect(result.path).toBe('constrained');
        const value = grammar.parse(result.text);
        expect(validate(value), `${result.text}: ${ajv.errorsText(validate.errors)}`).toBe(true);
        texts.push(result.text);
      }
    }
    // The outputs are the model's: they differ between seeds and settings.
    expect(new Set(texts).size).toBeGreaterThan(1);
    if (process.env.MD_SHOW_OUTPUTS) console.log(name, texts);
    if (name === 'strings with escapes') expect(texts.some((t) => /\\["\\/bfnrtu]/.test(t))).toBe(true);
    if (name === 'optional fields') expect(new Set(texts.map((t) => Object.keys(JSON.parse(t) as object).join())).size).toBeGreaterThan(1);
  });
});

// The engine sees each token's streamed bytes: a SentencePiece vocabulary
// (▁ for spaces, <0xNN> byte tokens) and Llama 3's byte-level one work as
// Qwen 3's does.
describe.each(['llama2', 'llama3'] as const)('the %s vocabulary', (name) => {
  test('JSON under a schema with strings, escapes and nesting: complete and valid for 3 seeds', async () => {
    const other = await grammarModel(mkdtempSync(join(dir, `${name}-`)), name);
    try {
      const schema = {
        type: 'object',
        properties: { text: { type: 'string' }, items: { type: 'array', items: { enum: ['a b', 'ü'] }, maxItems: 2 } },
        required: ['text', 'items'],
      };
      const grammar = await other.createGrammarForJsonSchema(schema);
      const validate = new Ajv({ strict: false }).compile(schema);
      const logitBias = biasTowards(other, '"\\,}]', 5);
      for (const seed of SEEDS) {
        const result = await generate(other, 'JSON:', {
          seed,
          temperature: 1,
          grammar,
          logitBias,
          maxTokens: 300,
          backend: 'native',
          contextSize: 512,
        });
        expect(result.stopReason, result.text).toBe('grammarComplete');
        expect(validate(grammar.parse(result.text)), result.text).toBe(true);
      }
    } finally {
      other.dispose();
    }
  });
});

describe('regex and EBNF', () => {
  const nameLike = '[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8}){0,2}';
  test.each([
    ['a name', nameLike, new RegExp(`^${nameLike}$`)],
    ['a date', '[0-9]{4}-(0[1-9]|1[0-2])-[0-3][0-9]', /^[0-9]{4}-(0[1-9]|1[0-2])-[0-3][0-9]$/],
  ])('regex: %s, every output matches', async (_, pattern, check) => {
    for (const seed of SEEDS) {
      const result = await generate(model, 'Say it:', {
        temperature: 1,
        seed,
        grammar: { type: 'regex', pattern },
        maxTokens: 60,
        backend: 'native',
        contextSize: 256,
      });
      expect(result.stopReason, result.text).toBe('grammarComplete');
      expect(result.text).toMatch(check);
    }
  });

  // Sums of digits and parenthesised sums: a recursive grammar a regex cannot check.
  const EBNF = 'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= [0-9] | "(" expr ")"';
  function isExpr(text: string): boolean {
    let at = 0;
    const term = (): boolean => {
      if (/[0-9]/.test(text[at] ?? '')) return ++at > 0;
      if (text[at] !== '(') return false;
      at++;
      if (!expr() || text[at] !== ')') return false;
      return ++at > 0;
    };
    const expr = (): boolean => {
      if (!term()) return false;
      while (text[at] === '+') {
        at++;
        if (!term()) return false;
      }
      return true;
    };
    return expr() && at === text.length;
  }
  test('EBNF: every output is derived by the grammar (checked by a recursive parser)', async () => {
    const logitBias = biasTowards(model, ')', 4);
    const texts: string[] = [];
    for (const seed of [...SEEDS, 4, 5, 6]) {
      const result = await generate(model, 'Sum:', {
        temperature: 1,
        seed,
        grammar: { type: 'ebnf', grammar: EBNF },
        logitBias,
        maxTokens: 200,
        backend: 'native',
        contextSize: 512,
      });
      expect(result.stopReason, result.text).toBe('grammarComplete');
      expect(isExpr(result.text), result.text).toBe(true);
      texts.push(result.text);
    }
    expect(texts.some((t) => t.includes('('))).toBe(true);
    expect(isExpr('(1+2')).toBe(false); // the checker can fail
  });
});

describe('with speculative decoding', () => {
  // n-gram drafts copy the example in the prompt; drafts the grammar refuses are cut, and verification rolls the matcher back.
  const PROMPT = 'Example: {"items": [{"id": 12, "ok": true}, {"id": 7, "ok": false}]} Now:';
  test.each(Object.entries(SETTINGS))(
    'exact verification gives the tokens of plain constrained decoding (%s, 3 seeds, n-gram and model drafts)',
    async (_, settings) => {
      const grammar = await model.createGrammarForJsonSchema(SCHEMAS.arrays);
      let drafted = 0,
        accepted = 0;
      for (const seed of SEEDS) {
        const options = { ...settings, seed, grammar, logitBias: endValues, maxTokens: 200, backend: 'native', contextSize: 512 } as const;
        const plain = await generate(model, PROMPT, options);
        expect(plain.stopReason).toBe('grammarComplete');
        for (const draft of ['ngram', model] as const) {
          const speculative = await generate(model, PROMPT, { ...options, speculative: { draft, draftTokens: 6, ngramMin: 2 } });
          expect(speculative.tokens).toEqual(plain.tokens);
          expect(speculative.stopReason).toBe('grammarComplete');
          drafted += speculative.stats.speculative!.drafted;
          accepted += speculative.stats.speculative!.accepted;
        }
      }
      expect(accepted).toBeGreaterThan(0);
      expect(accepted).toBeLessThan(drafted);
    },
  );

  test('rejection verification: every output is complete and validates', async () => {
    const grammar = await model.createGrammarForJsonSchema(SCHEMAS.arrays);
    const validate = new Ajv({ strict: false }).compile(SCHEMAS.arrays as object);
    for (const seed of SEEDS) {
      const result = await generate(model, PROMPT, {
        temperature: 1,
        seed,
        grammar,
        logitBias: endValues,
        maxTokens: 200,
        backend: 'native',
        contextSize: 512,
        speculative: { draft: 'ngram', ngramMin: 2, verification: 'rejection' },
      });
      expect(result.stopReason).toBe('grammarComplete');
      expect(validate(grammar.parse(result.text))).toBe(true);
    }
  });
});

describe('the grammar option', () => {
  test('a Session keeps its conversation across constrained calls; greedy is deterministic', async () => {
    const grammar = { type: 'json', schema: SCHEMAS.enums } as const;
    using session = new Session(model, { backend: 'native', contextSize: 512 });
    const first = await session.generate('Pick:', { temperature: 0, grammar });
    const second = await session.generate(' Again:', { temperature: 0, grammar });
    expect(first.stopReason).toBe('grammarComplete');
    expect(second.stopReason).toBe('grammarComplete');
    expect(session.tokens.length).toBe(first.stats.promptTokens + first.tokens.length + second.stats.promptTokens + second.tokens.length);
    const again = await generate(model, 'Pick:', { temperature: 0, grammar, backend: 'native', contextSize: 512 });
    expect(again.tokens).toEqual(first.tokens);
  });

  test('a ChatSession reply under a schema parses; the next turn sees it in the history and is constrained again', async () => {
    const grammar = await model.createGrammarForJsonSchema<{ color: string; size: string }>(SCHEMAS.enums);
    using chat = new ChatSession(model, { backend: 'native', contextSize: 1024 });
    const first = await chat.promptWithMeta('Pick a color and a size, as JSON.', { grammar, temperature: 0.7, seed: 2 });
    expect(first.stopReason).toBe('grammarComplete');
    expect(['red', 'green', 'blue']).toContain(grammar.parse(first.responseText).color);
    const second = await chat.promptWithMeta('Another one.', { grammar, temperature: 0.7, seed: 3 });
    expect(second.stopReason).toBe('grammarComplete');
    expect(['S', 'M', 'L']).toContain(grammar.parse(second.responseText).size);
    expect(
      chat
        .getChatHistory()
        .filter((m) => m.role === 'assistant')
        .map((m) => m.content),
    ).toEqual([first.responseText, second.responseText]);
  });

  // A refusal unwinds no C++ frame in the engine: its stack ran out after
  // about 60 of them, until a refusal ended the instance (now: its thread).
  // The tiny model's vocabulary keeps the restarts quick.
  test('the engine survives 150 malformed schemas, regexes and grammars: each compiles or is an error, and the process and engine carry on', async () => {
    const tiny = await tinyModel();
    const random = seededRandom(7);
    // ('^' or '$' mid-pattern and unknown escapes are warnings, tested below, not errors.)
    const pieces = ['[', ']', '(', ')', '{', '}', '*', '+', '?', '|', '"', 'a', '::=', 'root', ' ', '\n', '-', '0', ',', '{2,1}', '\\d'];
    const text = () => Array.from({ length: 1 + Math.floor(random() * 12) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
    const values = [true, false, null, 0, -1, 1.5, 'x', [], {}, { type: 'string' }, { $ref: '#/nowhere' }];
    const keys = ['type', 'properties', 'items', 'required', 'enum', 'minLength', 'maximum', 'anyOf', '$ref', 'pattern', 'format', 'prefixItems'];
    const schema = (depth: number): Record<string, unknown> =>
      Object.fromEntries(
        Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const key = keys[Math.floor(random() * keys.length)];
          return [key, depth < 2 && random() < 0.3 ? schema(depth + 1) : values[Math.floor(random() * values.length)]];
        }),
      );
    let compiled = 0,
      refused = 0;
    for (let i = 0; i < 150; i++) {
      const spec =
        i % 3 === 0
          ? { type: 'regex', pattern: text() }
          : i % 3 === 1
            ? { type: 'ebnf', grammar: `root ::= ${text()}` }
            : { type: 'json', schema: schema(0) };
      try {
        await createGrammar(tiny, spec as never);
        compiled++;
      } catch (error) {
        expect(error instanceof GrammarError || error instanceof TypeError || error instanceof RangeError, String(error)).toBe(true);
        refused++;
      }
    }
    expect(compiled).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(50);
    const ok = await generate(tiny, 'x', { grammar: { type: 'regex', pattern: 'fine' }, backend: 'native', contextSize: 64 });
    expect(ok.text).toBe('fine');
    const grammar = await createGrammar(model, { type: 'regex', pattern: 'also fine' });
    expect((await generate(model, 'x', { grammar, backend: 'native', contextSize: 64 })).text).toBe('also fine');
    tiny.dispose();
  });

  test('maxTokens before the grammar is complete: stopReason maxTokens, and parse() says the JSON is incomplete', async () => {
    const grammar = await model.createGrammarForJsonSchema(SCHEMAS.numbers);
    const result = await generate(model, 'x', { seed: 1, temperature: 1, grammar, maxTokens: 3, backend: 'native', contextSize: 256 });
    expect(result.stopReason).toBe('maxTokens');
    expect(() => grammar.parse(result.text)).toThrow(/^The text is not complete JSON \(did generation stop before the grammar was complete\?\): /);
  });

  test("the engine's warnings are Node warnings (code MD_GRAMMAR_WARNING), without its build paths", async () => {
    const warnings: Error[] = [];
    const collect = (w: Error) => void warnings.push(w);
    process.on('warning', collect);
    try {
      await createGrammar(model, { type: 'regex', pattern: 'ab^c' });
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', collect);
    }
    const ours = warnings.filter((w) => (w as Error & { code?: string }).code === 'MD_GRAMMAR_WARNING');
    expect(ours.length).toBeGreaterThan(0); // the engine reads the pattern more than once, and warns each time
    expect(new Set(ours.map((w) => w.message))).toEqual(
      new Set([
        "grammar engine: Regex parsing warning at position 3: '^' should be at the start of the regex, but found in the middle. It is ignored.",
      ]),
    );
  });

  test('a spec is compiled once per model; a Grammar is for the model it was compiled for', async () => {
    const compile = vi.spyOn(GrammarThread.prototype, 'compile');
    const spec = { type: 'ebnf', grammar: 'root ::= "yes" | "no"' } as const;
    const results = [];
    for (let i = 0; i < 3; i++)
      results.push(await generate(model, 'Say:', { seed: i, temperature: 1, grammar: spec, backend: 'native', contextSize: 64 }));
    await createGrammar(model, spec);
    expect(compile).toHaveBeenCalledTimes(1);
    compile.mockRestore();
    for (const r of results) expect(['yes', 'no']).toContain(r.text);

    const other = await grammarModel(mkdtempSync(join(dir, 'other-')));
    try {
      const grammar = await model.createGrammar(spec);
      await expect(generate(other, 'Say:', { grammar, backend: 'native', contextSize: 64 })).rejects.toThrow(
        'Expected a Grammar created for the model being generated with (a grammar is compiled against its vocabulary) for grammar but received an object (Grammar)',
      );
    } finally {
      other.dispose();
    }
  });

  test.each([
    [{ type: 'json', schema: { type: 'frob' } }, 'The grammar engine refused grammar.schema: Unsupported type "frob"'],
    [
      { type: 'json', schema: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } }, required: ['a'] } },
      'The grammar engine refused grammar.schema: ',
    ],
    [{ type: 'regex', pattern: '[a-' }, "The grammar engine refused grammar.pattern: Regex parsing error at position 4: Unclosed '['"],
    [{ type: 'ebnf', grammar: 'root ::= "a" |' }, 'The grammar engine refused grammar.grammar: EBNF parser error at line 1, column 15'],
    [
      { type: 'ebnf', grammar: 'start ::= "a"' },
      'The grammar engine refused grammar.grammar: EBNF parser error at line 1, column 1: The root rule with name "root" is not found',
    ],
  ])('%j is a GrammarError naming the problem', async (grammar, message) => {
    const error = await generate(model, 'x', { grammar: grammar as never, backend: 'native', contextSize: 64 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GrammarError);
    expect((error as Error).message.startsWith(message), (error as Error).message).toBe(true);
    // The engine still works after refusing.
    const ok = await generate(model, 'x', { grammar: { type: 'regex', pattern: 'ok' }, backend: 'native', contextSize: 64 });
    expect(ok.text).toBe('ok');
  });

  test.each([
    [
      { grammar: 'json' },
      TypeError,
      "Expected { type: 'json', schema? }, { type: 'regex', pattern } or { type: 'ebnf', grammar, root? } for grammar but received \"json\" (string)",
    ],
    [{ grammar: { type: 'xml' } }, RangeError, "Expected 'json', 'regex' or 'ebnf' for grammar.type but received \"xml\" (string)"],
    [{ grammar: { type: 'regex', pattern: '' } }, RangeError, 'Expected a non-empty string for grammar.pattern but received "" (string)'],
    [
      { grammar: { type: 'json', schema: [] } },
      TypeError,
      'Expected a JSON schema (a plain object or a boolean) for grammar.schema but received an array of length 0',
    ],
    [{ grammar: { type: 'regex', pattern: 'a', flags: 'i' } }, TypeError, 'Unknown option grammar.flags; the options are: type, pattern'],
    [
      { grammar: { type: 'json', schema: { type: 'array', items: { type: 'integer' }, uniqueItems: true } } },
      RangeError,
      'Expected no uniqueItems: the grammar engine does not enforce it, so output could fail your schema (check the parsed array yourself) for grammar.schema.uniqueItems but received true (boolean)',
    ],
    [
      {
        grammar: {
          type: 'json',
          schema: { type: 'object', properties: { not: { type: 'object', properties: { n: { type: 'integer', multipleOf: 2 } } } } },
        },
      },
      RangeError,
      'Expected no multipleOf: the grammar engine does not enforce it, so output could fail your schema (check the parsed number yourself) for grammar.schema.properties["not"].properties["n"].multipleOf but received 2 (number)',
    ],
    [
      { grammar: { type: 'json', schema: { anyOf: [{ type: 'string' }, { if: { type: 'string' } }] } } },
      RangeError,
      'Expected no if: the grammar engine does not enforce it, so output could fail your schema (use anyOf of the cases) for grammar.schema.anyOf[1].if but received an object (Object)',
    ],
  ])('%j is refused before anything runs', async (options, kind, message) => {
    expect(() => generate(model, 'x', { ...(options as GenerateOptions), backend: 'native', contextSize: 64 })).toThrow(new kind(message));
  });

  test("a schema nested deeper than the engine's limit is refused naming the path and the limit; 32 levels compile", async () => {
    // 60 levels of objects trap inside the engine ("memory access out of bounds"); they never reach it.
    const nested = (depth: number) => {
      let schema: JsonSchema = { type: 'string' };
      for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
      return schema;
    };
    const deepPath = `grammar.schema${'.properties["a"]'.repeat(33)}`;
    expect(() => generate(model, 'x', { grammar: { type: 'json', schema: nested(100) }, backend: 'native', contextSize: 64 })).toThrow(
      new RangeError(
        `Expected a subschema nested at most 32 levels deep (the grammar engine's limit) for ${deepPath} but received an object (Object)`,
      ),
    );
    // Each object is one level (its property's subschema is the next): 32 compile, 33 do not.
    await model.createGrammarForJsonSchema(nested(32) as never);
    expect(() => generate(model, 'x', { grammar: { type: 'json', schema: nested(33) }, backend: 'native', contextSize: 64 })).toThrow(RangeError);
  });
});
