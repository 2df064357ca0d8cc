// fuzz-hostile.test.ts: what a file, a template or a schema holds, chosen
// by someone trying to hurt the process. Each case ends as a result or an
// error of the kind that names what was wrong, never a crash, a trap or a
// hang, and the event loop is never held while it runs (thread CPU time,
// event-loop-probe.ts). Bounded for CI; for a long run:
//   METAL_DECODE_HOSTILE_CASES=2000 npx vitest run test/fuzz-hostile.test.ts
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { ChatSession, createGrammar, GgufError, GrammarError, loadModel, type GgufModel } from '../lib/index.js';
import { seededRandom } from '../lib/bench/logit-rows.js';
import { ChatTemplate } from '../lib/tokenizers/chat-template.js';
import { describeHold, watchEventLoop, type EventLoopReport } from './event-loop-probe.js';
import { modelTensors } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { writeGguf, type GgufValue } from './gguf/gguf-writer.js';

const CASES = Number(process.env.METAL_DECODE_HOSTILE_CASES ?? 60);
// The main thread's longest hold: the work it does itself (parsing a
// header's reply, validating a schema) is milliseconds; a stall is seconds.
const HOLD_BOUND_MS = 100;

const dir = mkdtempSync(join(tmpdir(), 'md-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const random = seededRandom(20261126);
const pick = <T>(options: readonly T[]): T => options[Math.floor(random() * options.length)];

// Pieces of Jinja that loop long, recurse, build huge strings, fail, or print nothing.
const TEMPLATE_PIECES = [
  '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}',
  '{% for i in range(100000000) %}x{% endfor %}',
  '{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}',
  '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}',
  '{% set s = "ab" %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s | length }}',
  '{{ messages[99].content }}',
  '{{ raise_exception("no") }}',
  '{{ undefined_name.field }}',
  '{% if add_generation_prompt %}<|assistant|>{% endif %}',
  '{{ "x" * 100000000 }}',
  '',
  '{% for m in messages %}{% endfor %}',
];

function hostileTemplate(): string {
  return Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(TEMPLATE_PIECES)).join('');
}

describe('fuzz: hostile chat templates', () => {
  test(`${Math.ceil(CASES / 3)} templates of long loops, recursion, huge strings and failures: each renders or is an error naming the template, within the time limit`, async () => {
    const probe = watchEventLoop();
    const outcomes = { rendered: 0, refused: 0 };
    for (let i = 0; i < Math.ceil(CASES / 3); i++) {
      const source = hostileTemplate();
      let template: ChatTemplate;
      try {
        template = new ChatTemplate(source, `case ${i}`);
      } catch (error) {
        expect((error as Error).message.startsWith(`case ${i}: the chat template does not parse`), String(error)).toBe(true);
        outcomes.refused++;
        continue;
      }
      try {
        const text = await template.renderAsync([{ role: 'user', content: 'hi' }], {}, undefined, 1000);
        expect(typeof text).toBe('string');
        outcomes.rendered++;
      } catch (error) {
        expect((error as Error).message.startsWith(`case ${i}: the chat template`), `${source}: ${String(error)}`).toBe(true);
        outcomes.refused++;
      } finally {
        template.dispose();
      }
    }
    const report = probe.stop();
    expect(report.longestHoldMs, describeHold(report)).toBeLessThan(HOLD_BOUND_MS);
    expect(outcomes.rendered).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});

// Schemas, patterns and grammars that nest deep, repeat long, recurse or break.
function hostileSpec(): unknown {
  const nested = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : { type: 'array', items: nested(depth - 1, leaf) });
  switch (Math.floor(random() * 9)) {
    case 0:
      return { type: 'json', schema: nested(1 + Math.floor(random() * 120), { type: 'integer' }) };
    case 1:
      return { type: 'json', schema: { type: 'string', minLength: pick([1, 50, 1000, 1e7, 1e12, -1, 1.5]) } };
    case 2:
      return { type: 'json', schema: { type: 'array', items: { type: 'string' }, minItems: pick([0, 100, 1e6, 1e15]) } };
    case 3:
      return { type: 'json', schema: { enum: Array.from({ length: pick([1, 1000, 20000]) }, (_, k) => `v${k}`) } };
    case 4:
      return { type: 'regex', pattern: pick(['a{1000000}', '(a|b){0,100000}', '((a*)*)*b', '[', '(?=a)b', 'a{2,1}', '\\p{L}+', 'x'.repeat(100000)]) };
    case 5:
      return {
        type: 'ebnf',
        grammar: pick(['root ::= root "a" | "a"', 'root ::= a\na ::= root', 'root ::= "a"{0,1000000}', 'root ::= ', 'root ::= [^]*']),
      };
    case 6:
      return { type: 'json', schema: { $ref: '#' } };
    case 7:
      return {
        type: 'json',
        schema: {
          type: 'object',
          properties: Object.fromEntries(Array.from({ length: pick([10, 2000]) }, (_, k) => [`p${k}`, { type: 'integer' }])),
          required: [],
        },
      };
    default:
      return { type: 'json', schema: { anyOf: Array.from({ length: pick([2, 500]) }, (_, k) => ({ const: k })) } };
  }
}

describe('fuzz: hostile grammars', () => {
  test(`${Math.ceil(CASES / 3)} schemas, patterns and grammars: each compiles, is a GrammarError, or is refused naming the option; never a trap or a held loop`, async () => {
    const path = join(dir, 'grammar.gguf');
    const { metadata, tensors } = modelTensors(variantSpec('qwen3', 'Q8_0', 2));
    await writeGguf(path, metadata, tensors);
    const model = await loadModel(path, { threads: 1 });
    const probe = watchEventLoop();
    const outcomes = { compiled: 0, refused: 0 };
    try {
      for (let i = 0; i < Math.ceil(CASES / 3); i++) {
        const spec = hostileSpec();
        try {
          await createGrammar(model, spec as never, { timeoutMs: 1500 });
          outcomes.compiled++;
        } catch (error) {
          const named = error instanceof GrammarError || error instanceof RangeError || error instanceof TypeError;
          expect(named, `${JSON.stringify(spec).slice(0, 200)}: ${String(error)}`).toBe(true);
          expect((error as Error).message).not.toMatch(/memory access out of bounds|Aborted\(\)/);
          outcomes.refused++;
        }
      }
    } finally {
      model.dispose();
    }
    const report = probe.stop();
    expect(report.longestHoldMs, describeHold(report)).toBeLessThan(HOLD_BOUND_MS);
    expect(outcomes.compiled).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});

// Metadata values of the wrong type, out of range, huge, or repeated.
function hostileValue(): GgufValue {
  switch (Math.floor(random() * 8)) {
    case 0:
      return { type: 'string', value: 'x'.repeat(pick([0, 1, 70000])) };
    case 1:
      return { type: 'u32', value: pick([0, 1, 3, 0xffffffff, 65536]) };
    case 2:
      return { type: 'i32', value: pick([-1, -2147483648, 2147483647]) };
    case 3:
      return { type: 'f32', value: pick([NaN, Infinity, -1, 0, 1e30]) };
    case 4:
      return { type: 'u64', value: pick([0, 2 ** 40, 2 ** 53 - 1]) };
    case 5:
      return { type: 'bool', value: random() < 0.5 };
    case 6:
      return { type: 'strings', value: Array.from({ length: pick([0, 3, 100000]) }, (_, k) => `s${k}`) };
    default:
      return { type: 'f32s', value: Array.from({ length: pick([0, 5, 100000]) }, () => random()) };
  }
}

async function runOrRefuse(path: string): Promise<'ran' | 'refused'> {
  let model: GgufModel;
  try {
    model = await loadModel(path, { threads: 1, prefetch: false });
  } catch (error) {
    if (!(error instanceof GgufError)) throw new Error(`${path}: ${String(error)}`, { cause: error });
    expect(error.file).toBe(path);
    return 'refused';
  }
  try {
    const sequence = model.openSequence({ backend: 'native', contextSize: 8 });
    await sequence.evaluate(Uint32Array.of(1, 2), 0);
    if (model.chatTemplate) {
      const chat = new ChatSession(model, { backend: 'native', contextSize: 64 });
      await chat.prompt('hi', { maxTokens: 2 }).catch((error: Error) => {
        if (!error.message.includes('chat template')) throw error;
      });
      chat.dispose();
    }
  } finally {
    model.dispose();
  }
  return 'ran';
}

describe('fuzz: hostile GGUF metadata', () => {
  test(`${CASES} files with metadata of the wrong type or size, repeated keys, huge names and hostile templates: each runs or is a GgufError; the loop is never held`, async () => {
    const base = modelTensors(variantSpec('llama3', 'Q8_0', 3));
    const keys = Object.keys(base.metadata);
    const outcomes = { ran: 0, refused: 0 };
    let worst = { longestHoldMs: 0 } as EventLoopReport;
    for (let i = 0; i < CASES; i++) {
      const metadata: Record<string, GgufValue> = { ...base.metadata };
      const tensors = base.tensors.map((t) => ({ ...t }));
      const kind = i % 4;
      if (kind === 0) metadata[pick(keys)] = hostileValue();
      else if (kind === 1) metadata['tokenizer.chat_template'] = { type: 'string', value: hostileTemplate() };
      else if (kind === 2) metadata[pick(['x'.repeat(70000), '', 'general.\u0000name', pick(keys).toUpperCase()])] = hostileValue();
      else {
        const t = pick(tensors);
        t.name = pick(['x'.repeat(70000), '', tensors[0].name, `${t.name}\u0000`]);
      }
      const path = join(dir, `hostile-${i}.gguf`);
      await writeGguf(path, metadata, tensors);
      if (kind === 0 && random() < 0.5) {
        // Two entries with one key: a 12-character key renamed to another of the same length in the bytes.
        const bytes = readFileSync(path);
        const at = bytes.indexOf('general.name');
        if (at >= 0) writeFileSync(path, Buffer.concat([bytes.subarray(0, at), Buffer.from('general.type'), bytes.subarray(at + 12)]));
      }
      // Watched while the package works, not while the test writes the file.
      const probe = watchEventLoop();
      outcomes[await runOrRefuse(path)]++;
      const report = probe.stop();
      if (report.longestHoldMs > worst.longestHoldMs) worst = report;
      rmSync(path);
    }
    expect(worst.longestHoldMs, describeHold(worst)).toBeLessThan(HOLD_BOUND_MS);
    expect(outcomes.ran).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});
