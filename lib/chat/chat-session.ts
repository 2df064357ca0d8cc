// chat-session.ts: a conversation with a model on one sequence, shaped as
// node-llama-cpp's LlamaChatSession: prompt(text) -> the reply, a system
// prompt, and a chat history to read, replace and restore.
//
// Each turn renders the whole conversation with the model's chat template,
// but evaluates only what the sequence does not hold yet. Normally the new
// rendering starts with the text the sequence holds (the last rendering and
// the reply as generated), so only the rest is encoded and evaluated. When
// it does not (the history was replaced, a reply was aborted, or the
// template rewrites old turns, as Qwen 3's drops their reasoning), the whole
// rendering is encoded and the sequence is kept up to the first token that
// differs.
import { invalidParameterError, SessionBusyError } from '../errors.js';
import { checkKnownKeys } from '../sampling-options.js';
import type { GenerationResult, StopReason } from '../generate/decode-loop.js';
import { resolveGenerate, type GenerateOptions } from '../generate/generate-options.js';
import type { DecodeModel } from '../generate/model.js';
import { Session, type SessionOptions } from '../generate/session.js';
import { isPlainObject } from '../predicates.js';
import { ChatTemplate, type ChatMessage } from '../tokenizers/chat-template.js';
import { checkChatHistory, type ChatHistoryInput } from './chat-history.js';
import type { ChatTokenizer } from './chat-tokenizer.js';
import { encodePieces, piecesFrom, renderPrompt, type RenderedPrompt } from './render-prompt.js';

/** A model a ChatSession can talk to: a DecodeModel with a chat template and a full tokenizer. */
export interface ChatModel extends DecodeModel {
  readonly tokenizer: DecodeModel['tokenizer'] & Partial<ChatTokenizer>;
  readonly chatTemplate?: ChatTemplate;
  readonly info?: { path?: string };
}

export interface ChatSessionOptions extends SessionOptions {
  /** The first message of the history, with role 'system'. */
  systemPrompt?: string;
  /** A Jinja chat template to use instead of the model's (required when the model has none). */
  chatTemplate?: string;
  /** More variables for the template, e.g. Qwen 3's { enable_thinking: false }. */
  templateVariables?: Readonly<Record<string, unknown>>;
}

export interface ChatPromptResult {
  /** The reply, as node-llama-cpp's promptWithMeta gives it: a list of text parts (one here). */
  response: string[];
  /** The reply's text. */
  responseText: string;
  stopReason: StopReason;
  /** The trigger that stopped the reply (stopReason 'customStopTrigger'). */
  customStopTrigger?: string;
  /** Everything the generation reports: tokens, backend, seed, timings. */
  result: GenerationResult;
}

const SESSION_OPTION_NAMES = new Set(['backend', 'contextSize', 'systemPrompt', 'chatTemplate', 'templateVariables']);

export class ChatSession {
  readonly model: ChatModel;
  readonly #session: Session;
  readonly #template: ChatTemplate;
  readonly #ownTemplate: boolean; // made from options.chatTemplate: its thread ends with the session
  readonly #tokenizer: ChatTokenizer;
  readonly #systemPrompt: string | undefined;
  readonly #variables: Readonly<Record<string, unknown>> | undefined;
  #history: ChatMessage[];
  // The text the sequence holds, when it is known exactly (undefined: compare tokens instead).
  #heldText: string | undefined = '';
  // A prompt is being encoded (before its generation holds the session).
  #encoding = false;

  constructor(model: ChatModel, options: ChatSessionOptions = {}) {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
    checkKnownKeys(options, SESSION_OPTION_NAMES, '');
    const { systemPrompt, chatTemplate, templateVariables, ...sessionOptions } = options;
    if (templateVariables !== undefined && !isPlainObject(templateVariables)) {
      throw invalidParameterError('templateVariables', 'a plain object of template variables', templateVariables, 'type');
    }
    if (systemPrompt !== undefined && typeof systemPrompt !== 'string') throw invalidParameterError('systemPrompt', 'a string', systemPrompt, 'type');
    if (chatTemplate !== undefined && typeof chatTemplate !== 'string')
      throw invalidParameterError('chatTemplate', 'a Jinja template string', chatTemplate, 'type');
    const tokenizer = model?.tokenizer;
    if (typeof tokenizer?.tokenText !== 'function' || typeof tokenizer.specialTexts !== 'function' || typeof tokenizer.encodePieces !== 'function') {
      throw invalidParameterError('model', 'a model with a vocabulary (a GgufModel loaded from a file with tokenizer.ggml.tokens)', model, 'type');
    }
    const origin = model.info?.path ?? 'the model';
    const template = chatTemplate === undefined ? model.chatTemplate : new ChatTemplate(chatTemplate, 'options.chatTemplate');
    if (template === undefined) {
      throw new TypeError(`${origin} has no chat template (tokenizer.chat_template): pass one as new ChatSession(model, { chatTemplate: '...' })`);
    }
    this.model = model;
    this.#tokenizer = tokenizer as ChatTokenizer;
    this.#template = template;
    this.#ownTemplate = chatTemplate !== undefined;
    this.#systemPrompt = systemPrompt;
    this.#variables = templateVariables && { ...templateVariables };
    this.#history = this.#initialHistory();
    this.#session = new Session(model, sessionOptions);
  }

  get #busy(): boolean {
    return this.#encoding || this.#session.busy;
  }

  /** The session the conversation runs on: its tokens, backend and contextSize. */
  get session(): Session {
    return this.#session;
  }

  /** Sends `text` as the user's message and resolves with the model's reply, which joins the history. */
  async prompt(text: string, options?: GenerateOptions): Promise<string> {
    return (await this.promptWithMeta(text, options)).responseText;
  }

  /**
   * prompt() with the stop reason and the generation's result. A reply
   * that fails or is aborted (without stopOnAbortSignal) leaves the
   * history as it was.
   */
  async promptWithMeta(text: string, options?: GenerateOptions): Promise<ChatPromptResult> {
    if (typeof text !== 'string') throw invalidParameterError('text', 'a string', text, 'type');
    if (this.#busy) throw new SessionBusyError('This ChatSession is already replying; wait for the reply (or stop it) before the next prompt');
    resolveGenerate(options); // bad options are errors before the sequence is touched
    const history = [...this.#history, { role: 'user' as const, content: text }];
    let result: GenerationResult;
    let rendered: RenderedPrompt;
    this.#encoding = true;
    try {
      // The signal ends a long rendering too, but with stopOnAbortSignal an
      // abort is a reply that stops (the generation's rule): the rendering
      // then runs to its end or its time limit.
      rendered = await this.#render(history, options?.stopOnAbortSignal === true ? undefined : options?.signal);
      const tokens = await this.#tokensToEvaluate(rendered);
      this.#encoding = false;
      result = await this.#session.generate(tokens, options);
    } catch (error) {
      this.#heldText = undefined; // the sequence may hold part of a reply
      throw error;
    } finally {
      this.#encoding = false;
    }
    this.#history = [...history, { role: 'assistant', content: result.text }];
    // The sequence now holds the rendering and the reply's tokens, whose
    // bytes may run past result.text (a stop trigger's start is kept).
    this.#heldText = rendered.text + Buffer.concat(result.tokens.map((t) => this.#tokenizer.tokenBytes(t))).toString('utf8');
    return {
      response: [result.text],
      responseText: result.text,
      stopReason: result.stopReason,
      ...(result.stopTrigger !== undefined && { customStopTrigger: result.stopTrigger }),
      result,
    };
  }

  /** The conversation so far (a copy): the system prompt, then user and assistant turns. */
  getChatHistory(): ChatMessage[] {
    return this.#history.map((m) => ({ ...m }));
  }

  /**
   * Replaces the conversation, for example with one saved by
   * getChatHistory() (messages as { role, content }, or node-llama-cpp's
   * { type, text } / { type: 'model', response } items). The next prompt
   * reuses as much of the sequence as still matches.
   */
  setChatHistory(history: readonly ChatHistoryInput[]): void {
    if (this.#busy) throw new SessionBusyError('This ChatSession is replying; set the history after the reply ends');
    this.#history = checkChatHistory(history);
    this.#heldText = undefined;
  }

  /** Back to the system prompt alone. */
  resetChatHistory(): void {
    this.setChatHistory(this.#initialHistory());
  }

  dispose(): void {
    this.#session.dispose();
    if (this.#ownTemplate) this.#template.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#session[Symbol.asyncDispose]();
    if (this.#ownTemplate) this.#template.dispose();
  }

  #initialHistory(): ChatMessage[] {
    return this.#systemPrompt === undefined ? [] : [{ role: 'system', content: this.#systemPrompt }];
  }

  #render(history: readonly ChatMessage[], signal: AbortSignal | undefined): Promise<RenderedPrompt> {
    return renderPrompt(this.#template, history, this.#tokenizer, this.#variables, signal);
  }

  // The tokens to append to the sequence for `rendered`, rewinding it first
  // when it holds text the rendering does not start with.
  async #tokensToEvaluate(rendered: RenderedPrompt): Promise<Uint32Array> {
    const held = this.#session.tokens;
    const heldText = this.#heldText;
    if (heldText !== undefined && held.length > 0 && rendered.text.startsWith(heldText)) {
      // Only the turn markers and the new message.
      return Uint32Array.from(await encodePieces(this.#tokenizer, piecesFrom(rendered, heldText.length), held[held.length - 1]));
    }
    const encoded = await encodePieces(this.#tokenizer, rendered.pieces, undefined);
    const bos = this.model.bosToken;
    const all = bos !== undefined && encoded[0] !== bos ? [bos, ...encoded] : encoded;
    let same = 0;
    while (same < held.length && same < all.length - 1 && held[same] === all[same]) same++;
    this.#session.rewind(same);
    this.#heldText = undefined;
    return Uint32Array.from(all.slice(same));
  }
}
