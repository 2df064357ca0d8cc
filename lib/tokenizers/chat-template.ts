// chat-template.ts: a model's chat template (tokenizer.chat_template, the
// Jinja template of its tokenizer_config.json) rendered with
// @huggingface/jinja, the engine Hugging Face's JavaScript libraries use.
// The result is text with the template's own special tokens in it, to be
// encoded with special tokens parsed.
import { Template } from '@huggingface/jinja';

import { RequestWorker } from '../request-worker.js';
import { renderWithGlobals } from './template-globals.js';

/** How long a rendering may take before its thread is ended: far past any real template's milliseconds. */
export const RENDER_TIMEOUT_MS = 10_000;

/** The rendering thread's heap: a template that builds strings past it ends its thread, not the process. */
const RENDER_HEAP_MB = 512;

/** A function call an assistant message makes, as chat templates read it (OpenAI's shape). */
export interface ChatToolCall {
  type: 'function';
  function: { name: string; arguments: Record<string, unknown> };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant message's function calls (absent when it made none: templates test for the key). */
  tool_calls?: ChatToolCall[];
  /** A tool message's function name. */
  name?: string;
}

export interface RenderOptions {
  /** End with the start of an assistant turn (default true). */
  addGenerationPrompt?: boolean;
  /** The text of the BOS and EOS tokens, which some templates print. */
  bosToken?: string;
  eosToken?: string;
  /** More variables for the template, e.g. Qwen 3's { enable_thinking: false } (llama.cpp's chat_template_kwargs). */
  variables?: Readonly<Record<string, unknown>>;
}

/** A parsed template; parse errors are reported once, here, naming the template. */
export class ChatTemplate {
  readonly #template: Template;
  #worker: RequestWorker | undefined;

  constructor(
    readonly source: string,
    readonly origin: string,
  ) {
    try {
      this.#template = new Template(source);
    } catch (error) {
      throw new Error(`${origin}: the chat template does not parse (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    }
  }

  /**
   * render() on a worker thread of this template's: the event loop turns
   * while it runs, `signal` ends it (an AbortError), and one that runs past
   * `timeoutMs` (RENDER_TIMEOUT_MS) is an error naming the template. The
   * messages and variables are copied to the thread (structured clone).
   */
  renderAsync(messages: readonly ChatMessage[], options: RenderOptions = {}, signal?: AbortSignal, timeoutMs = RENDER_TIMEOUT_MS): Promise<string> {
    this.#worker ??= new RequestWorker('tokenizers/template-worker.js', { source: this.source, origin: this.origin }, undefined, {
      maxOldGenerationSizeMb: RENDER_HEAP_MB,
    });
    return this.#worker
      .request<string>({ messages, options }, [], {
        signal,
        timeoutMs,
        timeoutError: () =>
          new Error(
            `${this.origin}: the chat template did not finish rendering in ${timeoutMs / 1000} s (a loop too long for a conversation?); its thread was ended`,
          ),
      })
      .catch((error: Error) => {
        // The thread itself failed (out of memory): say whose thread it was.
        if (error.name === 'AbortError' || error.message.startsWith(`${this.origin}: `)) throw error;
        throw new Error(`${this.origin}: the chat template's rendering failed (${error.message})`, { cause: error });
      });
  }

  /** Ends the rendering thread, if one was started. */
  dispose(): void {
    this.#worker?.dispose();
    this.#worker = undefined;
  }

  /** The rendering; an error naming the template when it fails, or prints nothing for messages it was given. */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    let text: string;
    try {
      text = renderWithGlobals(this.#template, {
        ...options.variables,
        messages,
        add_generation_prompt: options.addGenerationPrompt ?? true,
        bos_token: options.bosToken ?? '',
        eos_token: options.eosToken ?? '',
      });
    } catch (error) {
      throw new Error(`${this.origin}: the chat template failed to render (${error instanceof Error ? error.message : String(error)})`, {
        cause: error,
      });
    }
    // Nothing for a conversation: the template is at fault, not the prompt.
    if (text === '' && messages.length > 0) {
      throw new Error(
        `${this.origin}: the chat template rendered ${messages.length} message${messages.length === 1 ? '' : 's'} as empty text; it must print the conversation`,
      );
    }
    return text;
  }
}
