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
// which keeps the last reason for the failing call to throw and passes
// every other line on.
import { readFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname } from 'node:path';

import type * as XGrammar from '@mlc-ai/web-xgrammar';

export type XGrammarModule = typeof XGrammar;

/** The grammar engine refused a grammar, or failed; `reason` is its own words. */
export class GrammarError extends Error {
  readonly code = 'ERR_MD_GRAMMAR';
  constructor(what: string, readonly reason: string) {
    super(`${what}: ${reason}`);
    this.name = 'GrammarError';
  }
}

let started: Promise<XGrammarModule> | undefined;
let lastFatal: string | undefined;

function compileCommonJs(): XGrammarModule {
  const path = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const commonJs = new Module(path) as Module & { _compile(source: string, filename: string): void };
  commonJs.filename = path;
  commonJs.paths = (Module as unknown as { _nodeModulePaths(from: string): string[] })._nodeModulePaths(dirname(path));
  commonJs._compile(readFileSync(path, 'utf8'), path);
  return commonJs.exports as XGrammarModule;
}

async function start(): Promise<XGrammarModule> {
  const xgrammar = compileCommonJs();
  const original = console.error;
  const route = (...args: unknown[]) => {
    const line = args.map(String).join(' ');
    const fatal = /^\[FATAL\] [^:]*:\d+: ([\s\S]*)$/.exec(line);
    if (fatal) lastFatal = fatal[1].replace(/^Check failed: \([^)]*\) is false: /, '');
    else if (!line.startsWith('Aborted(')) original.apply(console, args);
  };
  console.error = route;
  try {
    // Its first call starts the WebAssembly module, which binds console.error now.
    await xgrammar.Testings._jsonSchemaToEBNF('{}');
  } finally {
    console.error = original;
  }
  return xgrammar;
}

/** The engine, started (about 50 ms the first time). */
export function xgrammar(): Promise<XGrammarModule> {
  return (started ??= start());
}

/** Runs an engine call; a refusal becomes a GrammarError that says what was refused and why. */
export async function engineCall<T>(what: string, call: () => Promise<T> | T): Promise<T> {
  lastFatal = undefined;
  try {
    return await call();
  } catch (error) {
    const reason = lastFatal ?? (error instanceof Error ? error.message : String(error));
    lastFatal = undefined;
    throw new GrammarError(what, reason.trim());
  }
}
