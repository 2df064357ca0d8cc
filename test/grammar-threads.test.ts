// grammar-threads.test.ts: a grammar compiles on a thread of its own. Specs
// the engine takes seconds over (a long minLength, a large repeat count, a
// left-recursive rule) never hold the event loop; a compile past its time
// limit or aborted ends its thread with an error that names the limit;
// callers that share a compile leave it one by one; grammars ended while
// idle compile again on use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';

import { AbortError, createGrammar, generate, GrammarError, loadModel, Session, type GgufModel } from '../lib/index.js';
import { GrammarThread } from '../lib/grammar/grammar-thread.js';
import { MAX_IDLE_GRAMMAR_THREADS } from '../lib/grammar/model-grammars.js';
import { describeHold, watchEventLoop } from './event-loop-probe.js';
import { grammarModel } from './grammar-model.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';

const dir = mkdtempSync(join(tmpdir(), 'md-grammar-threads-'));
let model: GgufModel;
let tiny: GgufModel;
beforeAll(async () => {
  model = await grammarModel(dir);
  const path = join(dir, 'tiny.gguf');
  await writeRandomModel(path, variantSpec('qwen3', 'Q8_0', 2));
  tiny = await loadModel(path, { threads: 1 });
});
afterAll(() => {
  model?.dispose();
  tiny?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

// Thread CPU time the main thread may hold the loop for: packing the
// 151,669-token vocabulary for the grammar threads is the longest piece.
const HOLD_BOUND_MS = 100;

// Specs the engine compiled for seconds on the main thread before (issue 31).
const SLOW = {
  longMinLength: { type: 'json', schema: { type: 'string', minLength: 1e7 } },
  largeRepeat: { type: 'regex', pattern: 'a{1000000}' },
  leftRecursive: { type: 'ebnf', grammar: 'root ::= root "a" | "a"' },
} as const;

describe('compiling never holds the event loop', () => {
  test('a string schema with minLength 1e7: past timeoutMs, a GrammarError naming the limit; the loop is never held', async () => {
    const probe = watchEventLoop();
    const started = performance.now();
    const error = await createGrammar(model, SLOW.longMinLength, { timeoutMs: 1500 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const waited = performance.now() - started;
    const report = probe.stop();
    expect(error).toBeInstanceOf(GrammarError);
    expect((error as Error).message).toBe(
      "Compiling grammar.schema: it took over 1500 ms, the time limit (createGrammar's timeoutMs option sets it; the compile was ended)",
    );
    expect(waited).toBeGreaterThanOrEqual(1500);
    expect(report.longestHoldMs, describeHold(report)).toBeLessThan(HOLD_BOUND_MS);
    expect(report.ticks).toBeGreaterThan(100);
  });

  test.each([
    ['a repeat of 1,000,000', SLOW.largeRepeat],
    ['a left-recursive EBNF rule', SLOW.leftRecursive],
  ])('%s: the loop is never held while it compiles', async (_, spec) => {
    const probe = watchEventLoop();
    const outcome = await createGrammar(model, spec, { timeoutMs: 60_000 }).then(
      () => 'compiled',
      (e: Error) => e.message,
    );
    const report = probe.stop();
    expect(report.longestHoldMs, `${describeHold(report)}; ${outcome}`).toBeLessThan(HOLD_BOUND_MS);
  });
});

describe('leaving a compile', () => {
  test('an aborted signal rejects at once with an AbortError; a generation aborted while its grammar compiles stops as aborted, its session unchanged', async () => {
    const controller = new AbortController();
    const pending = createGrammar(model, { type: 'json', schema: { type: 'string', minLength: 5000 } }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('enough')), 100);
    const started = performance.now();
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).message).toBe('Compiling the grammar was aborted');
    expect(((error as Error).cause as Error).message).toBe('enough');
    expect(performance.now() - started).toBeLessThan(2000); // the compile alone takes seconds

    const session = new Session(tiny, { backend: 'native', contextSize: 64 });
    const signal = AbortSignal.timeout(50);
    const result = await session.generate('x', {
      grammar: { type: 'json', schema: { type: 'string', minLength: 5001 } },
      signal,
      stopOnAbortSignal: true,
    });
    expect(result.stopReason).toBe('abort');
    expect(result.tokens.length).toBe(0);
    expect(session.tokens.length).toBe(0);
    session.dispose();
  });

  test('callers of one compile leave it one by one: the first aborts, the second gets the grammar, compiled once', async () => {
    const compile = vi.spyOn(GrammarThread.prototype, 'compile');
    try {
      const spec = { type: 'regex', pattern: '(yes|no)[0-9]{3}' } as const;
      const controller = new AbortController();
      const first = createGrammar(tiny, spec, { signal: controller.signal });
      const second = createGrammar(tiny, spec);
      controller.abort();
      await expect(first).rejects.toBeInstanceOf(AbortError);
      const grammar = await second;
      expect(compile).toHaveBeenCalledTimes(1);
      const result = await generate(tiny, 'x', { grammar, backend: 'native', contextSize: 64, seed: 3, temperature: 1 });
      expect(result.text).toMatch(/^(yes|no)[0-9]{3}$/);
    } finally {
      compile.mockRestore();
    }
  });

  test(`past ${MAX_IDLE_GRAMMAR_THREADS} idle grammars the oldest thread is ended; that grammar compiles again on its next use and still constrains`, async () => {
    const grammars = [];
    for (let i = 0; i <= MAX_IDLE_GRAMMAR_THREADS; i++) grammars.push(await createGrammar(tiny, { type: 'regex', pattern: `idle${i}` }));
    const compile = vi.spyOn(GrammarThread.prototype, 'compile');
    try {
      const last = await generate(tiny, 'x', { grammar: grammars[MAX_IDLE_GRAMMAR_THREADS], backend: 'native', contextSize: 64 });
      expect(last.text).toBe(`idle${MAX_IDLE_GRAMMAR_THREADS}`);
      expect(compile).toHaveBeenCalledTimes(0);
      const first = await generate(tiny, 'x', { grammar: grammars[0], backend: 'native', contextSize: 64 });
      expect(first.text).toBe('idle0');
      expect(compile).toHaveBeenCalledTimes(1);
    } finally {
      compile.mockRestore();
    }
  });
});

describe('createGrammar options', () => {
  const spec = { type: 'regex', pattern: 'a' } as const;
  test.each([
    [
      { timeoutMs: 0 },
      RangeError,
      'Expected a number of milliseconds from 1 to 2147483647, or Infinity for options.timeoutMs but received 0 (number)',
    ],
    [
      { timeoutMs: 1.5 },
      RangeError,
      'Expected a number of milliseconds from 1 to 2147483647, or Infinity for options.timeoutMs but received 1.5 (number)',
    ],
    [
      { timeoutMs: 2 ** 31 },
      RangeError,
      'Expected a number of milliseconds from 1 to 2147483647, or Infinity for options.timeoutMs but received 2147483648 (number)',
    ],
    [
      { timeoutMs: NaN },
      RangeError,
      'Expected a number of milliseconds from 1 to 2147483647, or Infinity for options.timeoutMs but received NaN (number)',
    ],
    [
      { timeoutMs: '100' },
      TypeError,
      'Expected a number of milliseconds from 1 to 2147483647, or Infinity for options.timeoutMs but received "100" (string)',
    ],
    [{ signal: 'stop' }, TypeError, 'Expected an AbortSignal for options.signal but received "stop" (string)'],
    [{ timeout: 100 }, TypeError, 'Unknown option options.timeout; the options are: signal, timeoutMs'],
    [5, TypeError, 'Expected an object { signal?, timeoutMs? } for options but received 5 (number)'],
  ])('%j is refused naming the option', async (options, kind, message) => {
    await expect(createGrammar(tiny, spec, options as never)).rejects.toThrow(new kind(message));
  });

  test('timeoutMs Infinity has no limit; a grammar of a disposed model is refused', async () => {
    const grammar = await createGrammar(tiny, { type: 'regex', pattern: 'inf' }, { timeoutMs: Infinity });
    expect((await generate(tiny, 'x', { grammar, backend: 'native', contextSize: 64 })).text).toBe('inf');
    const path = join(dir, 'tiny.gguf');
    const other = await loadModel(path, { threads: 1 });
    other.dispose();
    await expect(other.createGrammar({ type: 'regex', pattern: 'x' })).rejects.toThrow('createGrammar: the model was disposed');
  });
});
