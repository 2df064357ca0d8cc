// xgrammar.ts: XGrammar (@mlc-ai/web-xgrammar, the grammar engine of MLC
// and vLLM compiled to WebAssembly), loaded once per process, and its
// errors made into errors a caller can read.
//
// Why a loader: the package's package.json says "type": "module", but its
// lib/index.js is a UMD/CommonJS bundle. `import` evaluates it as ESM,
// where `require` and `__filename` do not exist and its start-up throws;
// `require` refuses it as ESM. So the file is compiled here as the
// CommonJS module it is (Module#_compile, which also gives its dynamic
// import() of the WebAssembly glue the default loader; vm.Script would need
// an experimental flag for that). The version is pinned in package.json:
// a release that ships real ESM would be imported directly.
//
// Why the console routing: a grammar the engine refuses (a schema keyword
// it does not support, an EBNF syntax error) aborts the WebAssembly call
// after printing "[FATAL] file:line: <reason>" through the console.error
// it bound when it started; the exception it throws says only "Aborted()".
// The engine is started here with a console.error of ours bound instead,
// which keeps the last reason for the failing call to throw. Its warnings
// ("[WARNING] file:line: '^' ... is ignored", through console.log) are
// kept, without its build machine's paths, for takeWarnings(): the engine
// runs on a grammar's own thread, and the main thread makes them Node
// warnings. Every other line is passed on.
//
// Why a refusal retires the instance: an abort unwinds no C++ frame, so
// the WebAssembly stack keeps what the failing call had pushed; after a
// few dozen refusals a call runs out of stack ("memory access out of
// bounds"). After a refusal, the next engine() starts a fresh instance;
// the main thread ends a grammar's thread after any refusal on it, and
// the grammar is compiled again on a new thread on its next use
// (grammar-thread.ts).
import { readFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname } from 'node:path';

import type * as XGrammar from '@mlc-ai/web-xgrammar';

import { GrammarError } from './grammar-error.js';

export type XGrammarModule = typeof XGrammar;

/** One WebAssembly instance of the engine; `retired` after a refusal (see above). */
export interface Engine {
  readonly xgrammar: XGrammarModule;
  retired: boolean;
}

let current: Promise<Engine> | undefined;
let lastFatal: string | undefined;
let warnings: string[] = [];

/** The engine's warnings since the last call. */
export function takeWarnings(): string[] {
  const taken = warnings;
  warnings = [];
  return taken;
}

function compileCommonJs(): XGrammarModule {
  const path = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const commonJs = new Module(path) as Module & { _compile(source: string, filename: string): void };
  commonJs.filename = path;
  commonJs.paths = (Module as unknown as { _nodeModulePaths(from: string): string[] })._nodeModulePaths(dirname(path));
  commonJs._compile(readFileSync(path, 'utf8'), path);
  return commonJs.exports as XGrammarModule;
}

// What the engine prints: a refusal's reason kept, warnings as Node's, the rest passed on.
function router(original: (...args: unknown[]) => void): (...args: unknown[]) => void {
  return (...args) => {
    const line = args.map(String).join(' ');
    const tagged = /^\[(FATAL|WARNING)\] [^:]*:\d+: ([\s\S]*)$/.exec(line);
    if (tagged?.[1] === 'FATAL') lastFatal = tagged[2].replace(/^Check failed: \([^)]*\) is false: /, '');
    else if (tagged) warnings.push(tagged[2]);
    else if (!line.startsWith('Aborted(')) original.apply(console, args);
  };
}

async function start(): Promise<Engine> {
  const xgrammar = compileCommonJs();
  const [log, error] = [console.log, console.error];
  console.log = router(log);
  console.error = router(error);
  try {
    // Its first call starts the WebAssembly module, which binds console.log and console.error now.
    await xgrammar.Testings._jsonSchemaToEBNF('{}');
  } finally {
    [console.log, console.error] = [log, error];
  }
  return { xgrammar, retired: false };
}

/** The engine's current instance, started when there is none or the last one was retired (about 50 ms). */
export async function engine(): Promise<Engine> {
  if (current && (await current).retired) current = undefined;
  return (current ??= start());
}

/**
 * Runs a call on `on`; a refusal becomes a GrammarError that says what was
 * refused and why, and retires the instance.
 */
export async function engineCall<T>(on: Engine, what: string, call: () => Promise<T> | T): Promise<T> {
  lastFatal = undefined;
  try {
    return await call();
  } catch (error) {
    on.retired = true;
    const reason = lastFatal ?? (error instanceof Error ? error.message : String(error));
    lastFatal = undefined;
    throw new GrammarError(what, reason.trim());
  }
}
