// speculative.ts: speculative decoding's parts that are not the loop: the
// `speculative` option, the drafters (n-gram prompt lookup, a draft
// model), and the rows of logits a verification reads. The loop
// (decode-loop.ts) verifies exactly by default: it samples each row as
// non-speculative decoding would (same position, same history, same
// noise), so the tokens are the same ones, and a draft only decides how
// many of them one forward pass yields. With verification 'rejection' it
// runs speculative sampling's test (rejection.ts) instead.
import { integerInRange, invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import { numberFromFloat16 } from '../float16.js';
import type { DecodeModel, Logits, ModelSequence } from './model.js';
import { drawFrom, speculativeUniform } from './rejection.js';
import type { StepSampler } from './step-sampler.js';

/**
 * Draft tokens per verification, at most. The CPU forward pass gives
 * batches of 16 tokens and more to the matrix units (AMX), whose sums are
 * rounded in another order: with the pending token, 15 keeps every row the
 * bits of a one-token step.
 */
export const MAX_DRAFT_TOKENS = 14;

export interface SpeculativeOptions {
  /**
   * Where drafts come from. 'ngram' (the default): prompt lookup over the
   * tokens so far. A DecodeModel with the same vocabulary (a smaller model
   * of the same family): its greedy continuation.
   */
  draft?: 'ngram' | DecodeModel;
  /** Draft tokens proposed per verification, 1 to 14. Default 5. */
  draftTokens?: number;
  /** The shortest suffix that may match earlier tokens. Default 1. */
  ngramMin?: number;
  /** The longest suffix tried first. Default 4. */
  ngramMax?: number;
  /**
   * 'exact' (the default): a draft token is kept when it is the token
   * non-speculative decoding samples there, so the output is those very
   * tokens. 'rejection': speculative sampling; a draft model samples its
   * drafts, each is kept with probability min(1, p/q), and the output has
   * the distribution of non-speculative sampling but not its tokens. It
   * keeps more of a sampled draft model's tokens. Greedy decoding is the
   * same either way.
   */
  verification?: 'exact' | 'rejection';
}

export interface ResolvedSpeculative {
  draft: 'ngram' | DecodeModel;
  draftTokens: number;
  ngramMin: number;
  ngramMax: number;
  verification: 'exact' | 'rejection';
}

/** A draft: its tokens, and with rejection verification the distribution each was drawn from (none: it was certain). */
export interface Draft {
  tokens: Uint32Array;
  probabilities?: Float64Array[];
}

export interface SpeculativeStats {
  /** Draft tokens proposed. */
  drafted: number;
  /** Of them, the ones verification kept. */
  accepted: number;
  /** accepted / drafted (0 when nothing was drafted). */
  acceptanceRate: number;
  /** The target model's forward passes while decoding (one per verification or plain step). */
  forwardPasses: number;
  /** The draft model's forward passes (0 with n-gram drafts). */
  draftForwardPasses: number;
  /** forwardPasses / generated tokens (0 when none were generated): below 1 is what speculation saves. */
  forwardPassesPerToken: number;
}

export function resolveSpeculative(value: unknown): ResolvedSpeculative | undefined {
  if (value === undefined || value === false) return undefined;
  const input = value === true ? {} : value;
  if (!isPlainObject(input))
    throw invalidParameterError('speculative', 'true or an object { draft, draftTokens, ngramMin, ngramMax, verification }', value, 'type');
  checkKnownKeys(input, new Set(['draft', 'draftTokens', 'ngramMin', 'ngramMax', 'verification']), 'speculative.');
  const draft = input.draft ?? 'ngram';
  const isModel =
    typeof draft === 'object' &&
    draft !== null &&
    typeof (draft as DecodeModel).openSequence === 'function' &&
    Number.isInteger((draft as DecodeModel).vocabSize);
  if (draft !== 'ngram' && !isModel) {
    throw invalidParameterError(
      'speculative.draft',
      "'ngram' or a DecodeModel with the target's vocabulary",
      draft,
      typeof draft === 'string' ? 'range' : 'type',
    );
  }
  const draftTokens = integerInRange('speculative.draftTokens', input.draftTokens ?? 5, 1, MAX_DRAFT_TOKENS);
  const ngramMin = integerInRange('speculative.ngramMin', input.ngramMin ?? 1, 1, 64);
  const ngramMax = integerInRange('speculative.ngramMax', input.ngramMax ?? Math.max(4, ngramMin), ngramMin, 64);
  const verification = input.verification ?? 'exact';
  if (verification !== 'exact' && verification !== 'rejection') {
    throw invalidParameterError(
      'speculative.verification',
      "'exact' or 'rejection'",
      verification,
      typeof verification === 'string' ? 'range' : 'type',
    );
  }
  return { draft: draft as 'ngram' | DecodeModel, draftTokens, ngramMin, ngramMax, verification };
}

/** Proposes up to `max` tokens to follow `tokens` (the sequence as kept so far). */
export interface Drafter {
  propose(tokens: Uint32Array, max: number): Promise<Draft>;
  /** The draft model's forward passes so far. */
  readonly forwardPasses: number;
  dispose(): void;
}

/**
 * The drafter of one generate() call; a model drafter checks the
 * vocabulary first. `sampler` (the call's sampling): with rejection
 * verification, a draft model samples its drafts with it.
 */
export function openDrafter(spec: ResolvedSpeculative, target: DecodeModel, contextSize: number, sampler: StepSampler): Drafter {
  if (spec.draft === 'ngram') {
    return {
      propose: async (tokens, max) => ({ tokens: ngramDraft(tokens, max, spec.ngramMin, spec.ngramMax) }),
      forwardPasses: 0,
      dispose: () => {},
    };
  }
  const draft = spec.draft;
  if (draft.vocabSize !== target.vocabSize) {
    throw invalidParameterError(
      'speculative.draft',
      `a model with the target's vocabulary (vocabSize ${target.vocabSize})`,
      `a model of vocabSize ${draft.vocabSize}`,
      'range',
    );
  }
  const sampled = spec.verification === 'rejection' && sampler.temperature > 0;
  return new ModelDrafter(draft, contextSize, sampled ? sampler : undefined);
}

/**
 * A draft model's continuation: greedy, or sampled with `sampler` (for
 * rejection verification, which needs each draft's distribution). Its
 * sequence keeps what it has seen: each round it evaluates only the kept
 * tokens it does not hold (a rejected draft is forgotten by evaluating
 * from where it diverged).
 */
class ModelDrafter implements Drafter {
  readonly #sequence: ModelSequence;
  readonly #sampler: StepSampler | undefined;
  readonly #held: number[] = []; // the tokens the draft sequence holds, from position 0
  forwardPasses = 0;

  constructor(model: DecodeModel, contextSize: number, sampler: StepSampler | undefined) {
    this.#sequence = model.openSequence({ backend: 'auto', contextSize });
    this.#sampler = sampler;
  }

  async propose(tokens: Uint32Array, max: number): Promise<Draft> {
    let common = 0;
    while (common < this.#held.length && common < tokens.length && this.#held[common] === tokens[common]) common++;
    // Evaluate from the first token not held (the last one again when all are, for its logits).
    const from = Math.min(common, tokens.length - 1);
    let logits = await this.#sequence.evaluate(tokens.slice(from), from);
    this.forwardPasses++;
    this.#held.length = 0;
    this.#held.push(...tokens);
    const out = new Uint32Array(max);
    const probabilities: Float64Array[] = [];
    const history = new Uint32Array(tokens.length + max);
    history.set(tokens);
    for (let i = 0; i < max; i++) {
      const position = tokens.length + i;
      if (this.#sampler) {
        const q = this.#sampler.distribution(logits, position, history.subarray(0, position));
        out[i] = drawFrom(q, speculativeUniform(this.#sampler.seed, position, 'draft'));
        probabilities.push(q);
      } else {
        out[i] = argmax(logits);
      }
      history[position] = out[i];
      if (i + 1 === max) break;
      logits = await this.#sequence.evaluate(out.subarray(i, i + 1), position);
      this.forwardPasses++;
      this.#held.push(out[i]);
    }
    return this.#sampler ? { tokens: out, probabilities } : { tokens: out };
  }

  dispose(): void {
    this.#sequence.dispose();
  }
}

// The first index of the largest logit (float32, or float16 bits).
function argmax(logits: Logits): number {
  let best = 0,
    top = -Infinity;
  for (let t = 0; t < logits.length; t++) {
    const value = logits instanceof Uint16Array ? numberFromFloat16(logits[t]) : logits[t];
    if (value > top) {
      top = value;
      best = t;
    }
  }
  return best;
}

/**
 * Prompt lookup: the longest suffix of `tokens` (ngramMax down to ngramMin
 * tokens) that also occurs earlier, at its latest earlier occurrence, and
 * the tokens that followed it there: up to `max` of them. Empty when no
 * suffix recurs.
 */
export function ngramDraft(tokens: Uint32Array, max: number, ngramMin: number, ngramMax: number): Uint32Array {
  const n = tokens.length;
  for (let size = Math.min(ngramMax, n - 1); size >= ngramMin; size--) {
    const suffix = n - size;
    // Latest first: the start of an earlier occurrence, which must leave at least one token after it.
    for (let start = suffix - 1; start >= 0; start--) {
      let same = true;
      for (let i = 0; i < size && same; i++) same = tokens[start + i] === tokens[suffix + i];
      if (same) return tokens.slice(start + size, Math.min(start + size + max, n));
    }
  }
  return new Uint32Array(0);
}

/**
 * The logits after each of the last `rows` of `tokens`, evaluated from
 * `position`: in one forward pass when the sequence can (evaluateRows),
 * else token by token (exact too, without the saving).
 */
export async function evaluateRows(
  sequence: ModelSequence,
  tokens: Uint32Array,
  position: number,
  rows: number,
): Promise<{ rows: Logits[]; passes: number }> {
  if (sequence.evaluateRows) return { rows: await sequence.evaluateRows(tokens, position, rows), passes: 1 };
  const out: Logits[] = [];
  const first = tokens.length - rows;
  if (first > 0) await sequence.evaluate(tokens.subarray(0, first), position);
  for (let i = first; i < tokens.length; i++) {
    // Copied: a sequence may hand out a view that its next evaluate overwrites.
    out.push((await sequence.evaluate(tokens.subarray(i, i + 1), position + i)).slice());
  }
  return { rows: out, passes: rows + (first > 0 ? 1 : 0) };
}
