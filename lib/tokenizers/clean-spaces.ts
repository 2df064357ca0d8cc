// clean-spaces.ts: the clean-up llama.cpp's detokenizer applies to the text
// of most byte-level BPE vocabularies (Hugging Face's
// clean_up_tokenization_spaces): the space before ? ! . , goes, " ' "
// closes up, and the space before 's 'm 're 've goes. Decoding such a
// vocabulary's ids then gives text without those spaces, as llama.cpp.
//
// Three passes over the characters, each as llama.cpp writes it (in place:
// the second pass blanks the space after a lone apostrophe, which the third
// then reads). Only ASCII is compared, so UTF-16 code units serve as bytes.

export function cleanSpaces(input: string): string {
  const text = input.split('');
  let total = text.length;

  // " ?", " !", " .", " ,": drop the space.
  let end = total;
  total = total ? 1 : 0;
  for (let i = 1; i < end; i++) {
    const x = text[i];
    if (text[i - 1] === ' ' && (x === '?' || x === '!' || x === '.' || x === ',')) total--;
    text[total++] = x;
  }

  // " ' ": drop both spaces.
  end = total;
  total = total ? 1 : 0;
  for (let i = 1; i < end; i++) {
    const x = text[i];
    if (x === "'" && i + 1 < end && text[i - 1] === ' ' && text[i + 1] === ' ') {
      total--;
      text[++i] = '\0';
    }
    text[total++] = x;
  }

  // " 's", " 'm", " 're", " 've": drop the space.
  end = total;
  total = total ? 1 : 0;
  for (let i = 1; i < end; i++) {
    const x = text[i];
    if (text[i - 1] === ' ' && x === "'" && i + 1 < end) {
      const x1 = text[i + 1];
      if (x1 === 's' || x1 === 'm') total--;
      else if (x1 !== 't' && x1 !== 'd' && i + 2 < end) {
        const x2 = text[i + 2];
        if ((x1 === 'r' || x1 === 'v') && x2 === 'e') total--;
      }
    }
    text[total++] = x;
  }
  return text.slice(0, total).join('');
}
