// tokenizer-strings.ts: varied strings for comparing tokenizers: code, CJK,
// emoji, runs of spaces and newlines, digits, contractions, mixed scripts,
// text that looks like special tokens, and seeded mixtures of all of them.
import { rng } from './random-model.js';

const PIECES = [
  'Hello, world!',
  "I'm sure they'll've done it; we'd, you're, it's",
  "DON'T SHOUT",
  "o'clock",
  "rock 'n' roll",
  'function add(a, b) {\n  return a + b;\n}\n',
  'for (let i = 0; i < 10; i++) { sum += arr[i] * 2; }',
  '    indented\tand\ttabbed',
  'if x == 1:\n    print("yes")\nelse:\n\tpass',
  '#include <stdio.h>\nint main(void) { return 0; }',
  '<div class="a">&nbsp;</div>',
  '日本語のテキストです。',
  '中文字符和标点，测试！',
  '한국어 문장입니다.',
  'Ελληνικά κείμενα',
  'Русский текст, ёжик.',
  'العربية نص',
  'हिन्दी पाठ',
  'emoji 😀🎉👍🏽 and 👨‍👩‍👧‍👦 family',
  '🙂🙃🙂',
  'mixed Latin日本🙂Кириллица123',
  '1234567890',
  '3.14159 2.71828 1e-10 0x1F 1,000,000',
  'tel: +1 (555) 123-4567',
  '2026-11-23T17:45:00Z',
  '   ',
  '\n\n\n',
  ' \n \n',
  '\t\t',
  'a  b   c    d',
  'trailing spaces   ',
  '\r\nwindows\r\nlines',
  '<|eot_id|>',
  '<|im_start|>user\nhi<|im_end|>',
  '<|begin_of_text|>',
  '<think>reasoning</think>',
  '[INST] x [/INST]',
  '<s></s>',
  'https://example.com/path?query=1&b=2#frag',
  'user@example.com',
  'C:\\Users\\name\\file.txt',
  '$$\\int_0^1 x^2 dx$$',
  '¡Olá! ¿Qué tal? Ça va, naïve café façade',
  'ß ẞ İ ı ﬁ',
  'ａｂｃ　全角',
  '\u200bzero\u200dwidth',
  '—–-…“”‘’',
];

export function tokenizerStrings(count: number, seed = 99): string[] {
  const next = rng(seed);
  const out = [...PIECES];
  while (out.length < count) {
    const parts = 1 + Math.floor(next() * 4);
    let s = '';
    for (let i = 0; i < parts; i++) {
      const piece = PIECES[Math.floor(next() * PIECES.length)];
      const cut = Math.floor(next() * piece.length);
      s += (next() < 0.5 ? piece : piece.slice(0, cut + 1)) + [' ', '', '\n', '  ', '.'][Math.floor(next() * 5)];
    }
    out.push(s);
  }
  return out.slice(0, count);
}

// Code point ranges for randomUnicodeStrings: ASCII and its control
// characters, Latin with diacritics, combining marks, Greek, Cyrillic,
// Hebrew and Arabic, Devanagari, Thai, Hangul jamo and syllables, general
// punctuation (zero-width and direction marks), currency and letterlike
// symbols, CJK, variation selectors, full-width forms, emoji, Linear B and
// private use.
const RANGES: readonly [number, number][] = [
  [0x20, 0x7e],
  [0x0, 0x1f],
  [0xa0, 0x24f],
  [0x300, 0x36f],
  [0x370, 0x3ff],
  [0x400, 0x4ff],
  [0x590, 0x6ff],
  [0x900, 0x97f],
  [0xe00, 0xe7f],
  [0x1100, 0x11ff],
  [0x2000, 0x206f],
  [0x20a0, 0x20cf],
  [0x2100, 0x214f],
  [0x3000, 0x30ff],
  [0x4e00, 0x9fff],
  [0xac00, 0xd7a3],
  [0xfe00, 0xfe0f],
  [0xff00, 0xffef],
  [0x1f300, 0x1faff],
  [0x10000, 0x1007f],
  [0xe000, 0xe0ff],
];

/** Seeded strings of 1-24 code points from all over Unicode, with runs of spaces. */
export function randomUnicodeStrings(count: number, seed = 5): string[] {
  const next = rng(seed);
  return Array.from({ length: count }, () => {
    let s = '';
    for (let i = 1 + Math.floor(next() * 24); i > 0; i--) {
      const [a, b] = RANGES[Math.floor(next() * RANGES.length)];
      s += String.fromCodePoint(a + Math.floor(next() * (b - a + 1)));
      if (next() < 0.2) s += ' '.repeat(1 + Math.floor(next() * 3));
    }
    return s;
  });
}
