// thought-segments.ts: a reasoning model's thinking, apart from its reply.
// Templates of reasoning models (Qwen 3, the DeepSeek-R1 distills) write
// it between <think> and </think>; the model starts it itself, or the
// generation prompt opens it. The reply's text is split as it streams, a
// tag split across chunks included, into thought and text chunks, as
// node-llama-cpp's response segments are.

/** A piece of a reply: its text, or its thinking. */
export type ResponseChunk = { type: 'text'; text: string } | { type: 'segment'; segmentType: 'thought'; text: string };

/** A reply's thinking, as node-llama-cpp's promptWithMeta gives it (ChatModelSegment). */
export interface ThoughtSegment {
  type: 'segment';
  segmentType: 'thought';
  text: string;
  /** Whether the model closed it (false: the reply stopped inside it). */
  ended: boolean;
}

export interface ThoughtTags {
  open: string;
  close: string;
}

const THINK: ThoughtTags = { open: '<think>', close: '</think>' };

/** The tags of a template that has thoughts (it handles </think> in replies), or undefined. */
export function thoughtTagsOf(templateSource: string, specialTexts: readonly string[]): ThoughtTags | undefined {
  return templateSource.includes(THINK.close) || specialTexts.includes(THINK.close) ? THINK : undefined;
}

/** Whether a rendered prompt leaves a thought open for the reply (its generation prompt ends with <think>). */
export function opensThought(rendered: string, tags: ThoughtTags): boolean {
  return rendered.lastIndexOf(tags.open) > rendered.lastIndexOf(tags.close);
}

/** Splits streamed text into thought and text chunks. */
export class ThoughtSplitter {
  readonly #tags: ThoughtTags;
  #inThought: boolean;
  #pending = ''; // text that may be the start of a tag
  #thoughtSeen = false;
  #closed = false;
  // After a tag, the newlines templates put around thoughts are not part of either side.
  #afterTag: boolean;

  constructor(tags: ThoughtTags, inThought: boolean) {
    this.#tags = tags;
    this.#inThought = inThought;
    this.#thoughtSeen = inThought;
    this.#afterTag = inThought;
  }

  get inThought(): boolean {
    return this.#inThought;
  }

  /** The chunks `text` completes (a possible tag's start is held until it is known). */
  push(text: string): ResponseChunk[] {
    const out: ResponseChunk[] = [];
    let rest = this.#pending + text;
    this.#pending = '';
    for (;;) {
      const tag = this.#inThought ? this.#tags.close : this.#tags.open;
      const at = rest.indexOf(tag);
      if (at >= 0) {
        this.#emit(out, rest.slice(0, at));
        this.#inThought = !this.#inThought;
        if (this.#inThought) this.#thoughtSeen = true;
        else this.#closed = true;
        rest = rest.slice(at + tag.length);
        this.#afterTag = true;
        continue;
      }
      // Hold back the longest end of `rest` that starts the tag.
      let keep = Math.min(tag.length - 1, rest.length);
      while (keep > 0 && !tag.startsWith(rest.slice(rest.length - keep))) keep--;
      this.#emit(out, rest.slice(0, rest.length - keep));
      this.#pending = rest.slice(rest.length - keep);
      return out;
    }
  }

  /** The held text, at the reply's end. */
  flush(): ResponseChunk[] {
    const out: ResponseChunk[] = [];
    this.#emit(out, this.#pending);
    this.#pending = '';
    return out;
  }

  /** Whether a thought was opened, and whether the last one was closed. */
  get state(): { seen: boolean; ended: boolean } {
    return { seen: this.#thoughtSeen, ended: this.#closed && !this.#inThought };
  }

  #emit(out: ResponseChunk[], text: string): void {
    if (this.#afterTag) {
      text = text.replace(/^\n+/, '');
      if (text !== '') this.#afterTag = false;
    }
    if (text === '') return;
    out.push(this.#inThought ? { type: 'segment', segmentType: 'thought', text } : { type: 'text', text });
  }
}

/** A whole reply's text split: its thought (when it had one) and its text. */
export function splitThought(text: string, tags: ThoughtTags, inThought: boolean): { thought?: ThoughtSegment; text: string } {
  const splitter = new ThoughtSplitter(tags, inThought);
  const chunks = [...splitter.push(text), ...splitter.flush()];
  const thought = chunks.filter((c) => c.type === 'segment').map((c) => c.text);
  const rest = chunks.filter((c) => c.type === 'text').map((c) => c.text);
  const { seen, ended } = splitter.state;
  return {
    ...(seen && { thought: { type: 'segment', segmentType: 'thought', text: thought.join(''), ended } }),
    text: rest.join(''),
  };
}
