// bpe-merges.ts: a byte-level BPE vocabulary's symbols and merges as ids.
// A symbol is a token's id, or one past the vocabulary for a text that is
// no token (a merge whose text the vocabulary lacks). compileMerges() runs
// on the GGUF header's thread, which ends after the read, so the merges'
// 300,000 strings never reach a thread that lives on; the encoder's thread
// gets the table (shared) and the few texts that are no token.
import { GgufError } from '../gguf/gguf-error.js';
import { MergeTable, type MergeTableData } from './bpe-merge-table.js';
import { byteLevelChars } from './byte-level.js';

export interface CompiledMerges {
  table: MergeTableData;
  /** The texts of the symbols that are no token, by id - vocabulary size. */
  otherTexts: string[];
}

/** Symbol ids by text. */
export class BpeSymbols {
  /** Token ids by text: the last id of a text, as llama.cpp's token_to_id. */
  readonly ids = new Map<string, number>();
  readonly vocabSize: number;
  readonly otherTexts: string[];
  readonly #otherIds = new Map<string, number>();

  constructor(tokens: readonly string[], otherTexts: string[] = []) {
    tokens.forEach((text, id) => this.ids.set(text, id));
    this.vocabSize = tokens.length;
    this.otherTexts = otherTexts;
    otherTexts.forEach((text, i) => this.#otherIds.set(text, this.vocabSize + i));
  }

  /** The symbol of `text`, made when it has none. */
  of(text: string): number {
    let id = this.ids.get(text) ?? this.#otherIds.get(text);
    if (id === undefined) this.#otherIds.set(text, (id = this.vocabSize + this.otherTexts.push(text) - 1));
    return id;
  }
}

/**
 * The merges ("left right" by rank, split at the first space after the
 * first character as llama.cpp's find(' ', 1)) as a MergeTable over the
 * tokens' symbols. The 256 byte-level characters take their symbols first.
 */
export function compileMerges(path: string, tokens: readonly string[], merges: readonly string[]): CompiledMerges {
  const symbols = new BpeSymbols(tokens);
  for (const c of byteLevelChars()) symbols.of(c);
  const table = new MergeTable(merges.length);
  merges.forEach((merge, rank) => {
    const space = merge.indexOf(' ', 1);
    if (space < 0)
      throw new GgufError(path, 'tokenizer.ggml.merges', `merge ${rank} (${JSON.stringify(merge)}) has no space after its first character`);
    const left = merge.slice(0, space);
    const right = merge.slice(space + 1);
    table.add(symbols.of(left), symbols.of(right), rank, symbols.of(left + right));
  });
  return { table: { slots: table.slots, seed: table.seed }, otherTexts: symbols.otherTexts };
}
