// model-grammars.ts: a model's grammars, each compiled on its own thread
// (grammar-thread.ts) and cached per model and spec: a chat that asks for
// the same schema every turn compiles it once.
//
// Each token is given to the engine as the bytes the decode loop streams
// for it (Tokenizer.tokenBytes), spelled (on the grammar's thread) in
// GPT-2's byte-level alphabet: the engine then matches the grammar against
// exactly the bytes the output will have, for every tokenizer (byte-level
// BPE, SentencePiece with its ▁ and <0xNN> byte tokens, a user's own).
// Control tokens have no bytes and so are given as empty strings, which
// the engine never allows inside the output; the model's end-of-generation
// tokens are passed explicitly as the stop tokens (its own guess misses
// <|im_end|>), and the engine allows them exactly where the grammar may end.
import { AbortError, invalidParameterError } from '../errors.js';
import { turn } from '../generate/event-loop.js';
import type { DecodeModel } from '../generate/model.js';
import { GrammarError } from './grammar-error.js';
import type { PackedVocabulary } from './grammar-protocol.js';
import { grammarField, type ResolvedGrammarSpec } from './grammar-spec.js';
import { GrammarThread } from './grammar-thread.js';

/** How long a compile may take unless createGrammar's timeoutMs says otherwise (a string schema with minLength 1000 takes 3 s). */
export const DEFAULT_COMPILE_TIMEOUT_MS = 30_000;

/**
 * Grammar threads kept when no generation uses them; past this, the least
 * recently used are ended (each holds an engine instance with the model's
 * vocabulary, tens of MB) and their grammars compile again on next use.
 */
export const MAX_IDLE_GRAMMAR_THREADS = 8;

/** How long a caller waits for a compile, and its way out. */
export interface CompileLimits {
  signal?: AbortSignal;
  timeoutMs?: number;
}

const vocabularies = new WeakMap<DecodeModel, Promise<PackedVocabulary>>();

/** Tokens packed between two turns of the event loop (about 5 ms of a 150k vocabulary's 100 ms). */
const PACK_SLICE = 8192;

/**
 * The model's token bytes in one shared buffer, handed to every grammar
 * thread without a copy; packed once per model, in slices that let the
 * event loop turn (the first tokenBytes() of each token is the costly part).
 */
function packedVocabulary(model: DecodeModel): Promise<PackedVocabulary> {
  let packed = vocabularies.get(model);
  if (!packed) {
    packed = packVocabulary(model);
    const made = packed;
    made.catch(() => vocabularies.get(model) === made && vocabularies.delete(model));
    vocabularies.set(model, made);
  }
  return packed;
}

async function packVocabulary(model: DecodeModel): Promise<PackedVocabulary> {
  const tokens = new Array<Uint8Array>(model.vocabSize);
  let length = 0;
  for (let token = 0; token < model.vocabSize; token++) {
    if (token % PACK_SLICE === PACK_SLICE - 1) await turn();
    const bytes: unknown = model.tokenizer.tokenBytes(token);
    if (!(bytes instanceof Uint8Array)) {
      throw invalidParameterError(`the tokenizer's tokenBytes(${token}) result`, "a Uint8Array of the token's UTF-8 bytes", bytes, 'type');
    }
    tokens[token] = bytes;
    length += bytes.length;
  }
  const packed = { bytes: new SharedArrayBuffer(length), offsets: new SharedArrayBuffer(4 * (model.vocabSize + 1)) };
  const [bytes, offsets] = [new Uint8Array(packed.bytes), new Uint32Array(packed.offsets)];
  for (let token = 0, at = 0; token < model.vocabSize; token++) {
    bytes.set(tokens[token], at);
    offsets[token] = at;
    at += tokens[token].length;
    offsets[token + 1] = at;
  }
  return packed;
}

/** One grammar's compile, shared by every caller waiting for it; ended when the last of them leaves. */
interface Compiling {
  /** The grammar's thread, once the vocabulary is packed. */
  thread?: GrammarThread;
  readonly done: Promise<GrammarThread>;
  readonly stop: AbortController;
  settled: boolean;
  waiters: number;
}

const perModel = new WeakMap<DecodeModel, Map<string, Compiling>>();
const compiledThreads = new Set<GrammarThread>();
const endWithModel = new FinalizationRegistry<Map<string, Compiling>>(endAll);

function endAll(entries: Map<string, Compiling>): void {
  for (const entry of entries.values()) {
    entry.stop.abort();
    if (entry.thread) {
      entry.thread.dispose();
      compiledThreads.delete(entry.thread);
    }
  }
  entries.clear();
}

// Ends the least recently used threads beyond MAX_IDLE_GRAMMAR_THREADS that no generation uses.
function endIdleThreads(): void {
  for (const thread of compiledThreads) if (thread.ended) compiledThreads.delete(thread);
  const idle = [...compiledThreads].filter((t) => !t.busy).sort((a, b) => a.lastUsed - b.lastUsed);
  for (const thread of idle.slice(0, Math.max(0, idle.length - MAX_IDLE_GRAMMAR_THREADS))) {
    thread.dispose();
    compiledThreads.delete(thread);
  }
}

/** Ends the threads of the model's grammars (the model was disposed); a Grammar used later compiles again. */
export function disposeModelGrammars(model: DecodeModel): void {
  const entries = perModel.get(model);
  if (entries) endAll(entries);
}

function startCompile(model: DecodeModel, resolved: ResolvedGrammarSpec, entries: Map<string, Compiling>): Compiling {
  const stop = new AbortController();
  const compile = async (): Promise<GrammarThread> => {
    const vocabulary = await packedVocabulary(model);
    if (stop.signal.aborted) throw new AbortError(stop.signal.reason, 'Compiling the grammar was aborted');
    const thread = new GrammarThread({ vocabulary, vocabSize: model.vocabSize, stops: [...model.eosTokens], spec: resolved.spec });
    made.thread = thread;
    await thread.compile(stop.signal);
    return thread;
  };
  const made: Compiling = { stop, done: compile(), settled: false, waiters: 0 };
  made.done.then(
    (thread) => {
      made.settled = true;
      compiledThreads.add(thread);
      endIdleThreads();
    },
    () => {
      made.settled = true;
      if (entries.get(resolved.key) === made) entries.delete(resolved.key); // a failure is not cached
    },
  );
  return made;
}

// Waits for `entry` within the caller's limits. A caller that leaves (its
// signal, its time limit) rejects at once; the compile goes on for the
// others, and is ended when no one waits for it any more.
function waitFor(entry: Compiling, resolved: ResolvedGrammarSpec, limits: CompileLimits): Promise<GrammarThread> {
  const { signal, timeoutMs = DEFAULT_COMPILE_TIMEOUT_MS } = limits;
  if (signal?.aborted) return Promise.reject(new AbortError(signal.reason, 'Compiling the grammar was aborted'));
  entry.waiters++;
  return new Promise<GrammarThread>((resolve, reject) => {
    let waiting = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const leave = (settle: () => void) => {
      if (!waiting) return;
      waiting = false;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (--entry.waiters === 0 && !entry.settled) entry.stop.abort();
      settle();
    };
    const onAbort = () => leave(() => reject(new AbortError(signal?.reason, 'Compiling the grammar was aborted')));
    if (timeoutMs !== Infinity) {
      timer = setTimeout(
        () =>
          leave(() =>
            reject(
              new GrammarError(
                `Compiling ${grammarField(resolved.spec)}`,
                `it took over ${timeoutMs} ms, the time limit (createGrammar's timeoutMs option sets it; the compile was ended)`,
              ),
            ),
          ),
        timeoutMs,
      );
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    entry.done.then(
      (thread) => leave(() => resolve(thread)),
      (error: Error) => leave(() => reject(error)),
    );
  });
}

/** The spec compiled for the model on a thread of its own; cached per model and spec. */
export function compiledGrammar(model: DecodeModel, resolved: ResolvedGrammarSpec, limits: CompileLimits = {}): Promise<GrammarThread> {
  let entries = perModel.get(model);
  if (!entries) {
    entries = new Map();
    perModel.set(model, entries);
    endWithModel.register(model, entries);
  }
  let entry = entries.get(resolved.key);
  if (entry?.thread?.ended) entry = undefined;
  if (!entry) {
    entry = startCompile(model, resolved, entries);
    entries.set(resolved.key, entry);
  }
  return waitFor(entry, resolved, limits);
}
