// session.ts: a sequence that lives across generate() calls. The second
// call continues where the first ended (its prompt is appended, nothing is
// prefilled again). One generation at a time: a second one while the first
// runs is a SessionBusyError, never two loops writing one sequence.
import type { BackendName } from '../backends.js';
import { invalidParameterError, SessionBusyError } from '../errors.js';
import { isInteger } from '../predicates.js';
import { DecodeRun, SequenceState } from './decode-loop.js';
import {
  DEFAULT_CONTEXT_SIZE,
  resolveGenerate,
  resolveOneShot,
  resolveSessionOptions,
  type GenerateOptions,
  type OneShotGenerateOptions,
  type ResolvedGenerate,
} from './generate-options.js';
import { Generation } from './generation.js';
import type { DecodeModel } from './model.js';
import { Utf8Carry } from './text-stream.js';

/** A prompt: text for the model's tokenizer, or token ids. */
export type Prompt = string | ArrayLike<number>;

export interface SessionOptions {
  /** Where the model and the sampler run. Default 'auto': the model's choice (metal when it runs here, else native, else js). */
  backend?: 'auto' | BackendName;
  /**
   * Tokens the sequence holds, prompt and generated. 'auto' (the default):
   * the model's choice (a GGUF model's trained context, less when that
   * does not fit in half of the free memory; 4096 for other models);
   * session.contextSizeReason says which.
   */
  contextSize?: number | 'auto';
}

export class Session {
  readonly model: DecodeModel;
  readonly #state: SequenceState;
  /** Why the context has its size: given, or what 'auto' picked and why. */
  readonly contextSizeReason: string;
  #running: Promise<void> | undefined; // settles when the running generation ends
  #done: () => void = () => {};
  #disposed = false;

  constructor(model: DecodeModel, options?: SessionOptions) {
    checkModel(model);
    const { backend, contextSize: given } = resolveSessionOptions(options);
    const auto =
      given === 'auto'
        ? (model.autoContextSize?.() ?? { contextSize: DEFAULT_CONTEXT_SIZE, reason: 'the default 4096 (the model does not choose)' })
        : undefined;
    const contextSize = auto?.contextSize ?? (given as number);
    this.contextSizeReason = auto ? `auto: ${auto.reason}` : 'given';
    this.model = model;
    this.#state = new SequenceState(model, model.openSequence({ backend, contextSize }), new Utf8Carry());
  }

  /** Where the model and the sampler run. */
  get backend(): BackendName {
    return this.#state.sequence.backend;
  }

  get contextSize(): number {
    return this.#state.tokens.length;
  }

  /** The sequence so far, prompts and generated tokens (a copy). */
  get tokens(): Uint32Array {
    return this.#state.view().slice();
  }

  /** Whether a generation is running on this session. */
  get busy(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Appends `prompt` (may be empty to just continue) and generates. Options
   * are checked now; the generation starts when it is iterated or awaited.
   */
  generate(prompt: Prompt, options?: GenerateOptions): Generation {
    const tokens = promptSource(this.model, prompt, () => this.#state.length === 0);
    const resolved = resolveGenerate(options);
    return new Generation(() => this.#start(tokens, resolved));
  }

  /**
   * Forgets the tokens from position `length` on: the next generate()
   * continues after the first `length` tokens, which the model does not
   * evaluate again.
   */
  rewind(length: number): void {
    if (this.#disposed) throw new Error('This Session was disposed');
    if (this.#running) throw new SessionBusyError('This Session is generating; rewind it after the generation ends');
    if (!isInteger(length) || length < 0 || length > this.#state.length) {
      throw invalidParameterError(
        'length',
        `an integer from 0 to ${this.#state.length} (the tokens the session holds)`,
        length,
        isInteger(length) ? 'range' : 'type',
      );
    }
    this.#state.rewind(length);
    this.#state.utf8.reset();
  }

  /**
   * Forgets tokens start .. end - 1; the tokens after them move down (as
   * node-llama-cpp's eraseContextTokenRanges). A model with a KV cache
   * shifts it (llama.cpp's context shift: the keys rotated to their new
   * positions), so nothing is evaluated again; other models evaluate the
   * moved tokens at the next generate().
   */
  async eraseTokens(start: number, end: number): Promise<void> {
    const length = this.#state.length;
    if (!isInteger(start) || start < 0 || start > length) {
      throw invalidParameterError(
        'start',
        `an integer from 0 to ${length} (the tokens the session holds)`,
        start,
        isInteger(start) ? 'range' : 'type',
      );
    }
    if (!isInteger(end) || end < start || end > length) {
      throw invalidParameterError(
        'end',
        `an integer from start (${start}) to ${length} (the tokens the session holds)`,
        end,
        isInteger(end) ? 'range' : 'type',
      );
    }
    if (end === start) return;
    this.#acquire();
    try {
      await this.#state.shift(start, end - start);
    } finally {
      this.#release();
    }
  }

  /** Frees the sequence. Throws while a generation runs (stop it, or use `await using` / Symbol.asyncDispose). */
  dispose(): void {
    if (this.#disposed) return;
    if (this.#running) throw new SessionBusyError('This Session is generating; dispose it after the generation ends');
    this.#disposed = true;
    this.#state.sequence.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Waits for a running generation to end, then disposes. */
  async [Symbol.asyncDispose](): Promise<void> {
    while (this.#running) await this.#running;
    this.dispose();
  }

  /**
   * @internal The tokens of a run and its result. The run takes the session
   * when it starts (the first next()) and gives it back when it ends.
   */
  #start(prompt: Uint32Array | (() => Promise<Uint32Array>), options: ResolvedGenerate) {
    const run = new DecodeRun(this.#state, prompt, options);
    const exclusive = async function* (this: Session) {
      this.#acquire();
      try {
        return yield* run.run();
      } finally {
        this.#release();
      }
    };
    return { tokens: exclusive.call(this), result: () => run.result };
  }

  #acquire(): void {
    if (this.#disposed) throw new Error('This Session was disposed');
    if (this.#running) {
      throw new SessionBusyError('This Session is already generating; wait for that generation to end (or stop it) before starting another');
    }
    this.#running = new Promise<void>((resolve) => (this.#done = resolve));
  }

  #release(): void {
    this.#running = undefined;
    this.#done();
  }

  /** @internal generate(model, ...): a session of its own, disposed when the generation ends. */
  static oneShot(model: DecodeModel, prompt: Prompt, options: OneShotGenerateOptions | undefined): Generation {
    checkModel(model);
    const { backend, contextSize, generate } = resolveOneShot(options);
    const tokens = promptSource(model, prompt, () => true);
    // Opened now, so a backend that cannot run is an error from generate() itself.
    const session = new Session(model, { backend, contextSize });
    return new Generation(() => {
      const started = session.#start(tokens, generate);
      return { tokens: released(started.tokens, () => session.dispose()), result: started.result };
    });
  }
}

// The same tokens, with `release` called once the generator ends however it ends.
async function* released<T, R>(tokens: AsyncGenerator<T, R, undefined>, release: () => void): AsyncGenerator<T, R, undefined> {
  try {
    return yield* tokens;
  } finally {
    release();
  }
}

/**
 * Generates from `model` on a sequence of its own (see Session for
 * multi-turn use). Returns a Generation: iterate it for `{ token, text }`
 * as tokens are released, and/or await it for the result.
 */
export function generate(model: DecodeModel, prompt: Prompt, options?: OneShotGenerateOptions): Generation {
  return Session.oneShot(model, prompt, options);
}

function checkModel(model: unknown): asserts model is DecodeModel {
  const m = model as DecodeModel | undefined;
  if (
    typeof m !== 'object' ||
    m === null ||
    !isInteger(m.vocabSize) ||
    typeof m.openSequence !== 'function' ||
    typeof m.tokenizer?.tokenBytes !== 'function' ||
    !Array.isArray(m.eosTokens)
  ) {
    throw invalidParameterError(
      'model',
      'a DecodeModel (vocabSize, tokenizer, eosTokens, openSequence): a BigramModel, a LogitsModel or your own',
      model,
      'type',
    );
  }
}

/**
 * A prompt's tokens: token ids checked now; text encoded now, or when the
 * run starts if the tokenizer has encodeAsync (long text then lets the
 * event loop turn). A text prompt starting a sequence gets the model's BOS
 * first, unless the text already begins with it; token ids are used as given.
 */
function promptSource(model: DecodeModel, prompt: unknown, startsSequence: () => boolean): Uint32Array | (() => Promise<Uint32Array>) {
  if (typeof prompt === 'string') {
    const tokenizer = model.tokenizer;
    if (typeof tokenizer.encodeAsync === 'function') {
      return async () => encodedTokens(model, await tokenizer.encodeAsync!(prompt), startsSequence());
    }
    if (typeof tokenizer.encode !== 'function') throw new TypeError("This model's tokenizer has no encode(): pass the prompt as token ids");
    return encodedTokens(model, tokenizer.encode(prompt), startsSequence());
  }
  if (Array.isArray(prompt) || (ArrayBuffer.isView(prompt) && !(prompt instanceof DataView)))
    return checkedTokens(model, prompt as ArrayLike<number>, 'prompt');
  throw invalidParameterError('prompt', 'a string or an array of token ids', prompt, 'type');
}

function encodedTokens(model: DecodeModel, encoded: unknown, startsSequence: boolean): Uint32Array {
  if (!Array.isArray(encoded) && !(ArrayBuffer.isView(encoded) && !(encoded instanceof DataView))) {
    throw invalidParameterError("the tokenizer's encode() result", 'an array of token ids', encoded, 'type');
  }
  let ids = encoded as ArrayLike<number>;
  const bos = model.bosToken;
  if (startsSequence && bos !== undefined && ids[0] !== bos) ids = [bos, ...Array.from(ids)];
  return checkedTokens(model, ids, 'the encoded prompt');
}

function checkedTokens(model: DecodeModel, ids: ArrayLike<number>, name: string): Uint32Array {
  const tokens = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const t = ids[i];
    if (!isInteger(t) || t < 0 || t >= model.vocabSize) {
      throw invalidParameterError(`${name}[${i}]`, `a token id from 0 to ${model.vocabSize - 1}`, t, isInteger(t) ? 'range' : 'type');
    }
    tokens[i] = t;
  }
  return tokens;
}
