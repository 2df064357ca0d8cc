// context-shift.ts: what a generation does when its sequence fills the
// context, with the contextShift option: llama.cpp's context shift. The
// first `keep` tokens stay; the `size` oldest after them are dropped, and
// the rest move down. A model sequence with shift() moves its KV cache
// (keys rotated to their new positions, nothing evaluated again); one
// without it evaluates the moved tokens again.
import { integerInRange, invalidParameterError } from '../errors.js';
import { isPlainObject } from '../predicates.js';
import { checkKnownKeys } from '../sampling-options.js';

export interface ContextShiftOptions {
  /**
   * Tokens at the start that are never dropped (a system prompt). Default:
   * 1 when the sequence starts with the model's BOS token, else 0.
   */
  keep?: number;
  /** Tokens dropped per shift. Default min(100, ceil(contextSize / 10)), node-llama-cpp's. */
  size?: number;
}

export interface ResolvedContextShift {
  keep: number | undefined;
  size: number | undefined;
}

const NAMES = new Set(['keep', 'size']);
const MAX_TOKENS = 1 << 24;

/** contextShift: true (the defaults), false or undefined (off), or { keep, size }. */
export function resolveContextShift(value: unknown): ResolvedContextShift | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { keep: undefined, size: undefined };
  if (!isPlainObject(value)) throw invalidParameterError('contextShift', 'true, false or { keep, size }', value, 'type');
  checkKnownKeys(value, NAMES, 'contextShift.');
  return {
    keep: value.keep === undefined ? undefined : integerInRange('contextShift.keep', value.keep, 0, MAX_TOKENS),
    size: value.size === undefined ? undefined : integerInRange('contextShift.size', value.size, 1, MAX_TOKENS),
  };
}

/** The default size: node-llama-cpp's min(100, ceil(contextSize / 10)). */
export function defaultShiftSize(contextSize: number): number {
  return Math.min(100, Math.ceil(contextSize / 10));
}

/**
 * The tokens to keep and drop for a sequence of `tokens` that is full.
 * `droppable`: how many tokens from the start may go (those handed out;
 * tokens held back for a stop trigger stay). Throws a RangeError naming
 * contextShift.keep when it leaves nothing to drop.
 */
export function planShift(
  shift: ResolvedContextShift,
  tokens: Uint32Array,
  droppable: number,
  bosToken: number | undefined,
): { keep: number; discard: number } {
  const contextSize = tokens.length;
  const keep = shift.keep ?? (bosToken !== undefined && tokens[0] === bosToken ? 1 : 0);
  const discard = Math.min(shift.size ?? defaultShiftSize(contextSize), droppable - keep);
  if (discard <= 0) {
    throw invalidParameterError(
      'contextShift.keep',
      `fewer than the ${droppable} tokens a shift may drop from (contextSize ${contextSize}), so that one can be dropped`,
      keep,
      'range',
    );
  }
  return { keep, discard };
}
