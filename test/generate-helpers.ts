// generate-helpers.ts: models whose output a test knows in advance.
import { BigramModel, LogitsModel, type Logits, type Tokenizer } from '../lib/index.js';

/** Token t reads as pieces[t]; encode() is not needed when prompts are token ids. */
export class PieceTokenizer implements Tokenizer {
  constructor(readonly pieces: readonly string[]) {}
  encode(text: string): number[] {
    const index = this.pieces.indexOf(text);
    if (index < 0) throw new Error(`no piece ${JSON.stringify(text)}`);
    return [index];
  }
  tokenBytes(token: number): Uint8Array {
    return Buffer.from(this.pieces[token] ?? '', 'utf8');
  }
}

export interface ScriptedModel {
  model: LogitsModel;
  /** Every call of the logits function: the tokens it was given and the position. */
  calls: { tokens: number[]; position: number }[];
}

/**
 * A model that generates `script` (greedily, and at any temperature since
 * the scripted token's logit is far above the rest): the k-th token after
 * the first prompt is script[k]. Logits are float32, or float16 bits.
 */
export function scriptedModel(options: {
  vocabSize: number;
  script: readonly number[];
  promptLength: number;
  tokenizer?: Tokenizer;
  eosTokens?: number[];
  float16?: boolean;
}): ScriptedModel {
  const calls: ScriptedModel['calls'] = [];
  const model = new LogitsModel({
    vocabSize: options.vocabSize,
    tokenizer: options.tokenizer,
    eosTokens: options.eosTokens,
    logits: (tokens, position) => {
      calls.push({ tokens: [...tokens], position });
      const next = options.script[position + tokens.length - options.promptLength];
      const row: Logits = options.float16 ? new Uint16Array(options.vocabSize) : new Float32Array(options.vocabSize);
      if (next !== undefined) row[next] = options.float16 ? 0x4900 /* 10 */ : 10;
      return row;
    },
  });
  return { model, calls };
}

export const CORPUS = `The quick brown fox jumps over the lazy dog, and the dog sleeps on.
A café in Zürich serves “coffee” → and 🙂 to every fox.

The lazy dog dreams of the quick brown fox; the fox dreams of nothing at all.`;

export const textModel = () => BigramModel.fromText(CORPUS);

/** Collects a generation's streamed events and its result. */
export async function stream<T extends AsyncIterable<{ token: number; text: string }> & PromiseLike<R>, R>(generation: T) {
  const events: { token: number; text: string }[] = [];
  for await (const event of generation) events.push(event);
  return { events, result: await generation };
}
