// control-looking.ts: token texts llama.cpp treats as control tokens
// whatever type the file gives them (llama-vocab.cpp finds the end-of-turn,
// end-of-message, fill-in-the-middle and end-of-generation tokens by their
// text, and marks them control). A token of the vocabulary with one of
// these texts is then read as that token in a prompt when special tokens
// are parsed, and as text otherwise, as llama.cpp does.

/** Texts of tokens that end generation, whatever ids the file names. */
export const END_OF_GENERATION_TEXTS: ReadonlySet<string> = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|return|>',
  '<|call|>',
  '<|flush|>',
  '<|calls|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '[EOS]',
  '<|end_of_text|>',
  '<end_of_utterance>',
  '<eos>',
  '<turn|>',
  '<|tool_response>',
]);

/**
 * Fill-in-the-middle tokens that also end generation, by the metadata key
 * that names them; llama.cpp looks for these texts when the key is absent.
 */
export const FILL_IN_THE_MIDDLE_END_TEXTS: Readonly<Record<'fim_pad' | 'fim_rep' | 'fim_sep', readonly string[]>> = {
  fim_pad: ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'],
  fim_rep: ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'],
  fim_sep: ['<|file_sep|>'],
};

export const CONTROL_LOOKING_TEXTS: ReadonlySet<string> = new Set([
  ...END_OF_GENERATION_TEXTS,
  ...Object.values(FILL_IN_THE_MIDDLE_END_TEXTS).flat(),
  // the rest of fill in the middle
  '<|fim_prefix|>',
  '<fim-prefix>',
  '<fim_prefix>',
  '<PRE>',
  '<|code_prefix|>',
  '<|prefix|>',
  '<|fim_suffix|>',
  '<fim-suffix>',
  '<fim_suffix>',
  '<SUF>',
  '<|code_suffix|>',
  '<|suffix|>',
  '<|fim_middle|>',
  '<fim-middle>',
  '<fim_middle>',
  '<MID>',
  '<|code_middle|>',
  '<|middle|>',
]);
