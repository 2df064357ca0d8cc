// prompt-plan.ts: what a ChatSession's prompt appends to its sequence:
// the tokens to keep (after erasing a span, when a shortened conversation's
// turns are further on in the sequence), and the tokens to evaluate.

// What a prompt appends: the sequence is cut to `from` tokens (after
// erasing `erase` when set), then `tokens` are evaluated.
export interface PromptPlan {
  erase?: { start: number; end: number };
  from: number;
  tokens: Uint32Array;
  // Whether the sequence's text is still known after it (the prompt continues the held text).
  continues: boolean;
}

// The plan for a shortened conversation: after the tokens that stay (the
// system prompt), the turns it still has are usually in the sequence
// further on; erasing the dropped turns between moves them to their new
// places without evaluating them again.
export function planReusing(held: Uint32Array, all: Uint32Array): PromptPlan {
  const same = commonPrefix(held, all, 0, 0, all.length - 1);
  let best = { gap: 0, matched: 0 };
  for (let gap = 1; same + gap < held.length; gap++) {
    if (held[same + gap] !== all[same]) continue;
    const matched = commonPrefix(held, all, same + gap, same, all.length - 1 - same);
    if (matched > best.matched) best = { gap, matched };
  }
  if (best.matched === 0) return { from: same, tokens: all.slice(same), continues: false };
  return {
    erase: { start: same, end: same + best.gap },
    from: same + best.matched,
    tokens: all.slice(same + best.matched),
    continues: false,
  };
}

// How many tokens a[aFrom..] and b[bFrom..] share from their start, at most `limit`.
export function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>, aFrom: number, bFrom: number, limit: number): number {
  let n = 0;
  while (n < limit && aFrom + n < a.length && bFrom + n < b.length && a[aFrom + n] === b[bFrom + n]) n++;
  return n;
}
