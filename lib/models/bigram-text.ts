// bigram-text.ts: a byte-level bigram model counted from text, for demos
// and tests that want readable output. Tokens 0-255 are bytes and token 256
// ends a paragraph. The factorisation is exact and simple: the embedding is
// the identity (dim = vocabSize) and the LM head's column j holds the
// log-counts of what follows token j, so logits(j) = ln(count(j -> v) + smoothing).
import { invalidParameterError } from '../errors.js';
import { halfFromNumber } from '../js/float16.js';
import { isFiniteFloat32 } from '../predicates.js';

/** The end-of-paragraph token of a text bigram. */
export const TEXT_EOS = 256;
const VOCAB = 257;

export interface TextBigramOptions {
  /** Added to every count before the log, so unseen pairs stay possible. Default 0.001. */
  smoothing?: number;
}

/** The weights of a text bigram: paragraphs (split on blank lines) each start after and end with TEXT_EOS. */
export function textBigramWeights(text: string, options: TextBigramOptions = {}) {
  if (typeof text !== 'string') throw invalidParameterError('text', 'a string', text, 'type');
  const smoothing = options.smoothing ?? 0.001;
  if (!isFiniteFloat32(smoothing) || smoothing <= 0) {
    throw invalidParameterError('smoothing', 'a finite number > 0', smoothing, typeof smoothing === 'number' ? 'range' : 'type');
  }
  const counts = new Float64Array(VOCAB * VOCAB); // counts[next * VOCAB + previous]
  for (const paragraph of text.split(/\n\s*\n/)) {
    const bytes = Buffer.from(paragraph.trim(), 'utf8');
    if (bytes.length === 0) continue;
    let previous = TEXT_EOS;
    for (const byte of [...bytes, TEXT_EOS]) {
      counts[byte * VOCAB + previous]++;
      previous = byte;
    }
  }
  const embedding = new Uint16Array(VOCAB * VOCAB);
  for (let i = 0; i < VOCAB; i++) embedding[i * VOCAB + i] = halfFromNumber(1);
  const head = Uint16Array.from(counts, (c) => halfFromNumber(Math.log(c + smoothing)));
  return { vocabSize: VOCAB, dim: VOCAB, embedding, head };
}
