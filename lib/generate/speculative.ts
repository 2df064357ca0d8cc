// speculative.ts: speculative decoding's parts that are not the loop: the
// `speculative` option, the n-gram draft (prompt lookup), and the rows of
// logits a verification reads. The loop (decode-loop.ts) verifies exactly:
// it samples each row as non-speculative decoding would (same position,
// same history, same noise), so the tokens are the same ones, and a draft
// only decides how many of them one forward pass yields.
import { integerInRange, invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';
import type { Logits, ModelSequence } from './model.js';

/**
 * Draft tokens per verification, at most. The CPU forward pass gives
 * batches of 16 tokens and more to the matrix units (AMX), whose sums are
 * rounded in another order: with the pending token, 15 keeps every row the
 * bits of a one-token step.
 */
export const MAX_DRAFT_TOKENS = 14;

export interface SpeculativeOptions {
  /** Where drafts come from. 'ngram' (the default): prompt lookup over the tokens so far. */
  draft?: 'ngram';
  /** Draft tokens proposed per verification, 1 to 14. Default 5. */
  draftTokens?: number;
  /** The shortest suffix that may match earlier tokens. Default 1. */
  ngramMin?: number;
  /** The longest suffix tried first. Default 4. */
  ngramMax?: number;
}

export interface ResolvedSpeculative {
  draft: 'ngram';
  draftTokens: number;
  ngramMin: number;
  ngramMax: number;
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
  /** forwardPasses / generated tokens (0 when none were generated): below 1 is what speculation saves. */
  forwardPassesPerToken: number;
}

export function resolveSpeculative(value: unknown): ResolvedSpeculative | undefined {
  if (value === undefined || value === false) return undefined;
  const input = value === true ? {} : value;
  if (!isPlainObject(input)) throw invalidParameterError('speculative', 'true or an object { draft, draftTokens, ngramMin, ngramMax }', value, 'type');
  checkKnownKeys(input, new Set(['draft', 'draftTokens', 'ngramMin', 'ngramMax']), 'speculative.');
  const draft = input.draft ?? 'ngram';
  if (draft !== 'ngram') throw invalidParameterError('speculative.draft', "'ngram'", draft, typeof draft === 'string' ? 'range' : 'type');
  const draftTokens = integerInRange('speculative.draftTokens', input.draftTokens ?? 5, 1, MAX_DRAFT_TOKENS);
  const ngramMin = integerInRange('speculative.ngramMin', input.ngramMin ?? 1, 1, 64);
  const ngramMax = integerInRange('speculative.ngramMax', input.ngramMax ?? Math.max(4, ngramMin), ngramMin, 64);
  return { draft, draftTokens, ngramMin, ngramMax };
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
export async function evaluateRows(sequence: ModelSequence, tokens: Uint32Array, position: number, rows: number): Promise<{ rows: Logits[]; passes: number }> {
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
