// constraint.ts: what the constrained path asks of a constraint (a grammar,
// or the user's tokenMask function): the tokens allowed next, as a bitmask,
// and its state moved along the tokens generated, or back over drafts
// verification rejects.
import { invalidParameterError } from '../errors.js';

/** What the tokenMask function sees before each token is sampled. */
export interface MaskState {
  /** The tokens generated so far in this call (a copy). */
  generated: Uint32Array;
  /** The position of the token about to be sampled. */
  position: number;
}

/**
 * A constraint: before every token, the tokens allowed next as a bitmask
 * (a Uint32Array of ceil(vocabSize / 32) words; bit t % 32 of word
 * floor(t / 32) allows token t), or null when the constrained output is
 * complete and generation should stop.
 */
export type TokenMask = (state: MaskState) => Uint32Array | null;

export interface Constraint {
  /** The stopReason when next() says the output is complete. */
  readonly completeReason: 'maskComplete' | 'grammarComplete';
  /**
   * The tokens allowed at `position` (bit t % 32 of word t >> 5 allows
   * token t), given the tokens accepted so far (`generated`, this call's);
   * null when the output is complete and generation stops.
   */
  next(generated: Uint32Array, position: number): Promise<Uint32Array | null>;
  /** Moves past `token`; false, changing nothing, when the constraint does not allow it here. */
  accept(token: number): Promise<boolean> | boolean;
  /** Undoes the last `count` accepted tokens (drafts that verification rejected). */
  rollBack(count: number): Promise<void> | void;
  /** Whether the output is complete after the tokens accepted (an end token accepted where the grammar may end). */
  readonly ended: boolean;
  dispose(): void;
}

/** What computing a constraint's masks cost in one generation. */
export interface MaskStats {
  /** Masks computed (one per token, one per draft row). */
  masks: number;
  /** Milliseconds the decode loop waited for them (a grammar's are computed on its own thread). */
  maskMs: number;
}

/** `constraint` with the time of each next() added to `stats`. */
export function timedConstraint(constraint: Constraint, stats: MaskStats): Constraint {
  return {
    get completeReason() {
      return constraint.completeReason;
    },
    get ended() {
      return constraint.ended;
    },
    async next(generated, position) {
      const start = performance.now();
      try {
        return await constraint.next(generated, position);
      } finally {
        stats.masks++;
        stats.maskMs += performance.now() - start;
      }
    },
    accept: (token) => constraint.accept(token),
    rollBack: (count) => constraint.rollBack(count),
    dispose: () => constraint.dispose(),
  };
}

export function allows(mask: Uint32Array, token: number): boolean {
  return (mask[token >>> 5] & (1 << (token & 31))) !== 0;
}

/** The user's tokenMask function as a constraint: stateless, its masks checked. */
export function tokenMaskConstraint(tokenMask: TokenMask, vocabSize: number): Constraint {
  const words = Math.ceil(vocabSize / 32);
  const expected = `null or a Uint32Array bitmask of ${words} words (ceil(vocabSize / 32))`;
  return {
    completeReason: 'maskComplete',
    ended: false,
    async next(generated, position) {
      const mask: unknown = tokenMask({ generated: generated.slice(), position });
      if (mask === null) return null;
      if (!(mask instanceof Uint32Array)) throw invalidParameterError('the tokenMask result', expected, mask, 'type');
      if (mask.length !== words) throw invalidParameterError('the tokenMask result', expected, `${mask.length} words`, 'range');
      return mask;
    },
    accept: () => true,
    rollBack() {},
    dispose() {},
  };
}
