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
//
// When the conversation no longer fits the context (contextShift, on by
// default), the model sees a shorter one: the strategy drops the oldest
// turns after the system prompt, and the sequence keeps the tokens that
// still match, moved to their new places by a context shift (nothing is
// evaluated twice). A reply that fills the context shifts it too, keeping
// the system prompt. The history keeps every message.
import { invalidParameterError, SessionBusyError } from '../errors.js';
import { checkKnownKeys } from '../sampling-options.js';
import type { GenerationResult, StopReason } from '../generate/decode-loop.js';
import { resolveGenerate, type GenerateOptions } from '../generate/generate-options.js';
import type { DecodeModel } from '../generate/model.js';
import { Session, type SessionOptions } from '../generate/session.js';
import { isPlainObject } from '../predicates.js';
import { ChatTemplate, type ChatMessage } from '../tokenizers/chat-template.js';
import { defaultShiftSize } from '../generate/context-shift.js';
import { checkChatHistory, toNodeLlamaCppHistory, type ChatHistoryInput, type NodeLlamaCppHistoryItem } from './chat-history.js';
import { detectCallSyntax, genericFunctionsText, genericResultText, type CallSyntax } from './call-syntax.js';
import { checkFunctions, templateTools, type ChatSessionFunctions } from './chat-functions.js';
import {
  anotherCall,
  callMessages,
  callOptions,
  mergeGenericCalls,
  resultText,
  returnedCalls,
  runCalls,
  writeCall,
  type FunctionCallItem,
} from './function-calls.js';
import { thoughtTagsOf, type ResponseChunk, type ThoughtSegment, type ThoughtTags } from './thought-segments.js';
import { checkReplyOptions, generateReply, type ReplyPart } from './reply-generation.js';
import { commonPrefix, planReusing, type PromptPlan } from './prompt-plan.js';
import { checkStrategyResult, resolveChatContextShift, type ChatContextShiftOptions, type ResolvedChatContextShift } from './context-window.js';
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
  /**
   * What happens when the conversation outgrows contextSize: on by default
   * (the oldest turns after the system prompt are dropped from what the
   * model sees), false to make it an error, or { size, strategy }.
   */
  contextShift?: boolean | ChatContextShiftOptions;
}

// The conversation as the template renders it for a prompt: the messages and the variables.
// continuation: text the reply goes on from, after the generation prompt
// (the generic syntax's calls and results, when the history ends with them).
type RenderView = (messages: readonly ChatMessage[]) => ConversationView;
interface ConversationView {
  messages: readonly ChatMessage[];
  variables: Readonly<Record<string, unknown>> | undefined;
  continuation?: string;
}

/** prompt()'s options: a generation's, and the functions the model may call. */
export interface ChatPromptOptions extends GenerateOptions {
  /** Every piece of the reply as it streams: its text, and its thinking (segmentType 'thought'), as node-llama-cpp's. */
  onResponseChunk?: (chunk: ResponseChunk) => void;
  /** thoughtTokens: the most tokens a thought may take before it is closed and the reply goes on (0: closed at once). */
  budgets?: { thoughtTokens?: number };
  /**
   * Functions the model may call while it replies (defineChatSessionFunction):
   * each call is written under a grammar, its handler run, and its result
   * given back to the model, which then goes on with its reply.
   */
  functions?: ChatSessionFunctions;
  /**
   * What happens when the model calls functions: 'run' (default) runs their
   * handlers and the reply goes on after the results; 'return' ends the
   * reply with its calls (stopReason 'functionCalls', each call's result
   * undefined, no handler run), for a caller that runs them itself and gives
   * the results back as tool messages in the history (setChatHistory, then
   * respondWithMeta()): what a server's client does.
   */
  functionCalls?: 'run' | 'return';
  /** The reply starts with a call of one of `functions` (OpenAI's tool_choice 'required', or one function named). */
  forceFunctionCall?: boolean;
}

export interface ChatPromptResult {
  /** The reply, as node-llama-cpp's promptWithMeta gives it: its text parts, its thoughts and its function calls, in order. */
  response: (string | ThoughtSegment | FunctionCallItem)[];
  /** The reply's text (every text part; not the thoughts). */
  responseText: string;
  /** Why the reply ended: its last generation's stop reason, or 'functionCalls' (functionCalls: 'return'). */
  stopReason: StopReason | 'functionCalls';
  /** The trigger that stopped the reply (stopReason 'customStopTrigger'). */
  customStopTrigger?: string;
  /** Everything the last generation of the reply reports: tokens, backend, seed, timings. */
  result: GenerationResult;
}

/** How many rounds of calls one reply may make before it is ended (a model that calls forever). */
export const MAX_CALL_ROUNDS = 16;

const SESSION_OPTION_NAMES = new Set(['backend', 'contextSize', 'systemPrompt', 'chatTemplate', 'templateVariables', 'contextShift']);
const PLACEHOLDER_MESSAGE = '\u{F0002}'; // a private-use character: where the first turn's text starts

export class ChatSession {
  readonly model: ChatModel;
  readonly #session: Session;
  readonly #template: ChatTemplate;
  readonly #ownTemplate: boolean; // made from options.chatTemplate: its thread ends with the session
  readonly #tokenizer: ChatTokenizer;
  readonly #systemPrompt: string | undefined;
  readonly #variables: Readonly<Record<string, unknown>> | undefined;
  #history: ChatMessage[];
  // What the model saw at the last prompt: the history, or its end after a context shift.
  #window: ChatMessage[];
  readonly #contextShift: ResolvedChatContextShift | undefined;
  // Where a reasoning model's thinking starts and ends (undefined: its template has none).
  readonly #thoughtTags: ThoughtTags | undefined;
  // The text the sequence holds, when it is known exactly (undefined: compare tokens instead).
  #heldText: string | undefined = '';
  // A reply is being prepared or made (its generations hold the session only while they run).
  #replying = false;
  // How the model writes function calls (read from the template when first needed).
  #syntax: Promise<CallSyntax> | undefined;

  constructor(model: ChatModel, options: ChatSessionOptions = {}) {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'a plain object', options, 'type');
    checkKnownKeys(options, SESSION_OPTION_NAMES, '');
    const { systemPrompt, chatTemplate, templateVariables, contextShift, ...sessionOptions } = options;
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
    this.#contextShift = resolveChatContextShift(contextShift);
    this.#thoughtTags = thoughtTagsOf(template.source, this.#tokenizer.specialTexts());
    this.#history = this.#initialHistory();
    this.#window = this.#initialHistory();
    this.#session = new Session(model, sessionOptions);
  }

  get #busy(): boolean {
    return this.#replying || this.#session.busy;
  }

  /** The session the conversation runs on: its tokens, backend and contextSize. */
  get session(): Session {
    return this.#session;
  }

  /** Sends `text` as the user's message and resolves with the model's reply, which joins the history. */
  async prompt(text: string, options?: ChatPromptOptions): Promise<string> {
    return (await this.promptWithMeta(text, options)).responseText;
  }

  /**
   * prompt() with the stop reason and the generation's result. A reply
   * that fails or is aborted (without stopOnAbortSignal) leaves the
   * history as it was.
   */
  async promptWithMeta(text: string, options?: ChatPromptOptions): Promise<ChatPromptResult> {
    if (typeof text !== 'string') throw invalidParameterError('text', 'a string', text, 'type');
    return this.#reply({ role: 'user', content: text }, options);
  }

  /**
   * The model's reply to the history as it stands, without a new user
   * message: after the results of calls a reply returned (functionCalls:
   * 'return'), given as tool messages with setChatHistory, or to a history
   * that ends with the user's message. The history must end with a user or
   * a tool message.
   */
  async respondWithMeta(options?: ChatPromptOptions): Promise<ChatPromptResult> {
    const last = this.#window.at(-1);
    if (!this.#busy && last?.role !== 'user' && last?.role !== 'tool') {
      throw new TypeError(
        `respondWithMeta() replies to a history that ends with a user or tool message; this one ends with ${last === undefined ? 'nothing' : `a message of role '${last.role}'`}: use prompt(text)`,
      );
    }
    return this.#reply(undefined, options);
  }

  async #reply(message: ChatMessage | undefined, options: ChatPromptOptions | undefined): Promise<ChatPromptResult> {
    if (this.#busy) throw new SessionBusyError('This ChatSession is already replying; wait for the reply (or stop it) before the next prompt');
    if (isPlainObject(options) && options.contextShift !== undefined) {
      throw new TypeError('contextShift belongs to the ChatSession: pass it to new ChatSession(model, { contextShift })');
    }
    if (options !== undefined && !isPlainObject(options)) resolveGenerate(options); // its error for options that are not an object
    const {
      functions: functionsOption,
      onResponseChunk,
      budgets,
      functionCalls = 'run',
      forceFunctionCall = false,
      ...generateOptions
    }: ChatPromptOptions = options ?? {};
    const functions = checkFunctions(functionsOption);
    if (functionCalls !== 'run' && functionCalls !== 'return')
      throw invalidParameterError('functionCalls', "'run' or 'return'", functionCalls, 'range');
    if (typeof forceFunctionCall !== 'boolean') throw invalidParameterError('forceFunctionCall', 'a boolean', forceFunctionCall, 'type');
    if (forceFunctionCall && functions === undefined)
      throw invalidParameterError('forceFunctionCall', 'false when no functions are given', forceFunctionCall, 'range');
    const { maxTokens, customStopTriggers } = resolveGenerate(generateOptions); // bad options are errors before the sequence is touched
    const reply = checkReplyOptions(onResponseChunk, budgets);
    let window = message === undefined ? [...this.#window] : [...this.#window, message];
    const added: ChatMessage[] = []; // the reply's messages before its last text: calls and results
    const response: ChatPromptResult['response'] = [];
    const record = (part: ReplyPart) => {
      if (part.thought && part.thought.text !== '') response.push(part.thought);
      if (part.text !== '') response.push(part.text);
    };
    let part: ReplyPart;
    let result: GenerationResult;
    let heldText: string | undefined;
    let returned: ChatMessage | undefined; // the reply's message with the calls it ends with (functionCalls: 'return')
    this.#replying = true;
    try {
      // The signal ends a long rendering too, but with stopOnAbortSignal an
      // abort is a reply that stops (the generation's rule): the rendering
      // then runs to its end or its time limit.
      const signal = generateOptions.stopOnAbortSignal === true ? undefined : generateOptions.signal;
      const syntax = functions !== undefined ? await this.#callSyntax() : undefined;
      const view = this.#view(functions, syntax);
      const triggers = syntax ? { customStopTriggers: [...customStopTriggers, syntax.trigger] } : {};
      const calling = (r: GenerationResult) => syntax !== undefined && r.stopReason === 'customStopTrigger' && r.stopTrigger === syntax.trigger;
      let rounds = 0;
      for (;;) {
        const prepared = await this.#prepare(window, view, signal, maxTokens);
        window = prepared.window;
        if (forceFunctionCall && rounds === 0) {
          // The reply starts with a call: the prompt is evaluated and the call written at once, as if the model wrote the trigger.
          const evaluated = await this.#session.generate(prepared.tokens, { ...callOptions(generateOptions), maxTokens: 0 });
          part = { result: { ...evaluated, stopReason: 'customStopTrigger', stopTrigger: syntax!.trigger }, raw: '', injected: false, text: '' };
        } else {
          part = await generateReply(this.#replyOn, prepared.tokens, generateOptions, reply, { ...triggers, ...prepared.shift }, prepared.heldText);
        }
        result = part.result;
        heldText = part.injected ? undefined : prepared.heldText;
        // The model started a call: write it (and any after it in the same
        // message), run them, and give it the results: in the next turn the
        // template renders, or (the generic syntax) in the reply's text.
        while (calling(result) && rounds++ < MAX_CALL_ROUNDS) {
          heldText = undefined;
          const callOnly = callOptions(generateOptions);
          const calls = [];
          for (let call = await writeCall(this.#session, this.#tokenizer, syntax!, functions!, callOnly, result); call;) {
            calls.push(call);
            const another = syntax!.parallel ? await anotherCall(this.#session, syntax!, callOnly) : undefined;
            call = another && (await writeCall(this.#session, this.#tokenizer, syntax!, functions!, callOnly, another));
          }
          if (calls.length === 0) {
            // Stopped by the signal (stopOnAbortSignal) while writing the call.
            const { stopTrigger: _trigger, ...rest } = result;
            result = { ...rest, stopReason: 'abort' };
            break;
          }
          if (functionCalls === 'return') {
            const items = returnedCalls(calls, functions!);
            record(part);
            response.push(...items);
            returned = callMessages(part.raw, items)[0];
            break;
          }
          const items = await runCalls(calls, functions!);
          record(part);
          response.push(...items);
          const messages = callMessages(part.raw, items);
          added.push(...messages);
          window = [...window, ...messages];
          if (syntax!.kind === 'template') break;
          const results = items.map((i) => genericResultText(resultText(i.result))).join('');
          const resultTokens = await this.#tokenizer.encodePieces([{ text: results, special: false }], { afterText: true });
          part = await generateReply(this.#replyOn, Uint32Array.from(resultTokens), generateOptions, reply, triggers, undefined);
          result = part.result;
        }
        if (returned !== undefined || !calling(result) || rounds > MAX_CALL_ROUNDS) break;
      }
    } catch (error) {
      this.#heldText = undefined; // the sequence may hold part of a reply
      throw error;
    } finally {
      this.#replying = false;
    }
    const last: ChatMessage = returned ?? { role: 'assistant', content: part!.raw };
    this.#history = [...this.#history, ...(message === undefined ? [] : [message]), ...added, last];
    this.#window = [...window, last];
    // The sequence now holds the rendering and the reply's tokens, whose
    // bytes may run past result.text (a stop trigger's start is kept),
    // unless the reply shifted the context or made calls.
    this.#heldText =
      heldText !== undefined && result.stats.contextShift === undefined
        ? heldText + Buffer.concat(result.tokens.map((t) => this.#tokenizer.tokenBytes(t))).toString('utf8')
        : undefined;
    if (returned === undefined) record(part!);
    if (response.length === 0) response.push('');
    return {
      response,
      responseText: response.filter((r): r is string => typeof r === 'string').join(''),
      stopReason: returned === undefined ? result!.stopReason : 'functionCalls',
      ...(returned === undefined && result.stopTrigger !== undefined && { customStopTrigger: result.stopTrigger }),
      result,
    };
  }

  // Renders `window` as the model sees it, shortened when it does not fit
  // (contextShift), and leaves the sequence at the tokens that stay: what
  // is left is `tokens`, to evaluate. heldText: the sequence's text after
  // them (the rendering).
  async #prepare(
    initial: ChatMessage[],
    view: RenderView,
    signal: AbortSignal | undefined,
    maxTokens: number,
  ): Promise<{
    window: ChatMessage[];
    tokens: Uint32Array;
    heldText: string;
    shift: { contextShift?: { keep: number | undefined; size: number | undefined } };
  }> {
    let window = initial;
    const message = window[window.length - 1];
    let rendered = await this.#render(view(window), signal);
    let plan = await this.#plan(rendered);
    const contextSize = this.#session.contextSize;
    const shift = this.#contextShift;
    const free = shift?.size ?? defaultShiftSize(contextSize);
    if (shift !== undefined && plan.from + plan.tokens.length > contextSize - free) {
      const maxTokensCount = contextSize - free;
      const tokenCount = async (history: readonly ChatMessage[]) => (await this.#encodeWhole(await this.#render(view(history), signal))).length;
      window = checkStrategyResult(await shift.strategy({ chatHistory: window.map((m) => ({ ...m })), maxTokensCount, tokenCount }), message);
      rendered = await this.#render(view(window), signal);
      plan = planReusing(this.#session.tokens, await this.#encodeWhole(rendered));
    }
    const needed = plan.from + plan.tokens.length;
    if (needed >= contextSize) throw this.#tooLong(needed, window.filter((m) => m.role !== 'system').length === 1);
    if (plan.erase) await this.#session.eraseTokens(plan.erase.start, plan.erase.end);
    this.#session.rewind(plan.from);
    if (!plan.continues) this.#heldText = undefined;
    // A reply that may fill the context shifts it, keeping the system prompt.
    const mayFill = shift !== undefined && needed + maxTokens > contextSize;
    return {
      window,
      tokens: plan.tokens,
      heldText: rendered.text,
      shift: mayFill ? { contextShift: { keep: await this.#systemTokens(view(window), rendered, signal), size: shift.size } } : {},
    };
  }

  // How the conversation is rendered for this prompt: with the functions
  // as the template's tools, or (the generic syntax) explained in a system
  // message and the calls written in the replies' text.
  #view(functions: ChatSessionFunctions | undefined, syntax: CallSyntax | undefined): RenderView {
    if (syntax?.kind !== 'generic' || functions === undefined) {
      const variables = functions !== undefined ? { ...this.#variables, tools: templateTools(functions) } : this.#variables;
      return (messages) => ({ messages, variables });
    }
    const explained: ChatMessage = { role: 'system', content: genericFunctionsText(templateTools(functions)) };
    return (messages) => {
      const merged = mergeGenericCalls(messages, syntax);
      const at = merged[0]?.role === 'system' ? 1 : 0;
      const shown = [...merged.slice(0, at), explained, ...merged.slice(at)];
      // Results the client gave back (respondWithMeta): the reply goes on in the message that holds the calls, as it does after a handler.
      if (messages.at(-1)?.role !== 'tool') return { messages: shown, variables: this.#variables };
      return { messages: shown.slice(0, -1), variables: this.#variables, continuation: shown.at(-1)!.content };
    };
  }

  get #replyOn(): { session: Session; tokenizer: ChatTokenizer; tags: ThoughtTags | undefined } {
    return { session: this.#session, tokenizer: this.#tokenizer, tags: this.#thoughtTags };
  }

  #callSyntax(): Promise<CallSyntax> {
    const endTexts = this.model.eosTokens.map((t) => this.#tokenizer.tokenText(t)).filter((t): t is string => t !== undefined && t !== '');
    this.#syntax ??= detectCallSyntax(this.#template, this.#variables, endTexts);
    return this.#syntax;
  }

  /**
   * The conversation so far (a copy): the system prompt, then user and
   * assistant turns, calls and their results; as node-llama-cpp's items
   * with 'node-llama-cpp'.
   */
  getChatHistory(): ChatMessage[];
  getChatHistory(format: 'node-llama-cpp'): NodeLlamaCppHistoryItem[];
  getChatHistory(format?: 'node-llama-cpp'): ChatMessage[] | NodeLlamaCppHistoryItem[] {
    if (format === 'node-llama-cpp') return toNodeLlamaCppHistory(this.#history);
    if (format !== undefined) throw invalidParameterError('format', "'node-llama-cpp' or nothing", format, 'range');
    return structuredClone(this.#history);
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
    this.#window = this.#history.map((m) => ({ ...m }));
    this.#heldText = undefined;
  }

  /** What the model saw at the last prompt and its reply (a copy): the history, or its end when a context shift dropped older turns. */
  getLastEvaluationContextWindow(): ChatMessage[] {
    return structuredClone(this.#window);
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

  async #render({ messages, variables, continuation }: ConversationView, signal: AbortSignal | undefined): Promise<RenderedPrompt> {
    const rendered = await renderPrompt(this.#template, messages, this.#tokenizer, variables, signal);
    if (continuation === undefined || continuation === '') return rendered;
    return { text: rendered.text + continuation, pieces: [...rendered.pieces, { text: continuation, special: false }] };
  }

  // What to append to the sequence for `rendered`: only the new text when
  // the sequence holds the start of it, else every token after the first
  // that differs.
  async #plan(rendered: RenderedPrompt): Promise<PromptPlan> {
    const held = this.#session.tokens;
    const heldText = this.#heldText;
    if (heldText !== undefined && held.length > 0 && rendered.text.startsWith(heldText)) {
      // Only the turn markers and the new message.
      const tokens = Uint32Array.from(await encodePieces(this.#tokenizer, piecesFrom(rendered, heldText.length), held[held.length - 1]));
      return { from: held.length, tokens, continues: true };
    }
    const all = await this.#encodeWhole(rendered);
    const same = commonPrefix(held, all, 0, 0, all.length - 1);
    return { from: same, tokens: all.slice(same), continues: false };
  }

  // The rendering's tokens as one text, with the model's BOS first.
  async #encodeWhole(rendered: RenderedPrompt): Promise<Uint32Array> {
    const encoded = await encodePieces(this.#tokenizer, rendered.pieces, undefined);
    const bos = this.model.bosToken;
    return Uint32Array.from(bos !== undefined && encoded[0] !== bos ? [bos, ...encoded] : encoded);
  }

  // The tokens of the system prompt's turn (and whatever opens the next
  // one): where the window's rendering parts from that of the system
  // prompt and a placeholder message. Without a system prompt, undefined
  // (the generation's default: the BOS token).
  async #systemTokens(
    { messages, variables }: { messages: readonly ChatMessage[]; variables: Readonly<Record<string, unknown>> | undefined },
    rendered: RenderedPrompt,
    signal: AbortSignal | undefined,
  ): Promise<number | undefined> {
    if (messages[0]?.role !== 'system') return undefined;
    const all = await this.#encodeWhole(rendered);
    const probe = await this.#encodeWhole(
      await this.#render({ messages: [messages[0], { role: 'user', content: PLACEHOLDER_MESSAGE }], variables }, signal),
    );
    return commonPrefix(all, probe, 0, 0, Math.min(all.length, probe.length));
  }

  #tooLong(needed: number, minimal: boolean): RangeError {
    const contextSize = this.#session.contextSize;
    const what = minimal ? 'The system prompt and the last message alone render' : 'The conversation renders';
    const advice =
      this.#contextShift === undefined ? 'a larger contextSize, or contextShift on to drop older turns' : 'a larger contextSize or a shorter message';
    return new RangeError(
      `${what} to ${needed} tokens, and contextSize is ${contextSize}, which must also hold at least one token of the reply: use ${advice}`,
    );
  }
}
