// function-calls.ts: writing a function call into a ChatSession's sequence
// once the model has started one (its syntax's trigger), and running it.
// The call's fixed text is appended as the template renders it; the
// function's name is generated under a grammar of the names, and its
// parameters under the JSON-schema grammar of that function's params, so
// the call always parses and validates.
import type { GenerationResult } from '../generate/decode-loop.js';
import type { GenerateOptions } from '../generate/generate-options.js';
import type { Session } from '../generate/session.js';
import type { ChatMessage, ChatToolCall } from '../tokenizers/chat-template.js';
import { genericResultText, type CallSyntax } from './call-syntax.js';
import { paramsSchema, type ChatSessionFunctions } from './chat-functions.js';
import type { ChatTokenizer } from './chat-tokenizer.js';

/** A call in a reply, as node-llama-cpp's promptWithMeta gives it (ChatModelFunctionCall). */
export interface FunctionCallItem {
  type: 'functionCall';
  name: string;
  description?: string;
  params: Record<string, unknown>;
  /** What the handler returned. */
  result: unknown;
  /** The call's text as the model's sequence holds it. */
  rawCall: string;
}

/** The options of a call's own generations: the reply's sampling and signal, without its callbacks, stops or constraint. */
export function callOptions(options: GenerateOptions | undefined): GenerateOptions {
  if (options === undefined) return {};
  const { onToken: _t, onTextChunk: _c, customStopTriggers: _s, grammar: _g, tokenMask: _m, maxTokens: _n, speculative: _p, ...rest } = options;
  return rest;
}

/** The most tokens a call's name and parameters may take. */
const NAME_TOKENS = 64,
  PARAMS_TOKENS = 4096;

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

async function append(
  session: Session,
  tokenizer: ChatTokenizer,
  pieces: readonly { text: string; special: boolean }[],
  options: GenerateOptions,
): Promise<void> {
  const some = pieces.filter((p) => p.text !== '');
  if (some.length === 0) return;
  const tokens = Uint32Array.from(await tokenizer.encodePieces(some, { afterText: true }));
  await session.generate(tokens, { ...options, maxTokens: 0 });
}

// A generation stopped by a trigger keeps the tokens it handed out, and
// the last may hold the trigger's start (or all of it, when it is one
// token). The sequence goes back to the last token wholly before the
// trigger; what it held of the text before the trigger is returned, to be
// written again.
function cutAtTrigger(session: Session, tokenizer: ChatTokenizer, stopped: GenerationResult): string {
  const text = Buffer.from(stopped.text, 'utf8');
  let bytes = 0,
    whole = 0;
  for (const token of stopped.tokens) {
    const next = bytes + tokenizer.tokenBytes(token).length;
    if (next > text.length) break;
    bytes = next;
    whole++;
  }
  session.rewind(session.tokens.length - (stopped.tokens.length - whole));
  return text.subarray(bytes).toString('utf8');
}

/**
 * Writes one call after the model wrote its syntax's trigger (`stopped`:
 * the generation the trigger stopped). Undefined when the signal stopped
 * it (with stopOnAbortSignal; without, the AbortError is thrown).
 */
export async function writeCall(
  session: Session,
  tokenizer: ChatTokenizer,
  syntax: CallSyntax,
  functions: ChatSessionFunctions,
  options: GenerateOptions,
  stopped: GenerationResult,
): Promise<{ name: string; params: Record<string, unknown>; rawCall: string } | undefined> {
  const special = syntax.kind === 'template';
  const before = cutAtTrigger(session, tokenizer, stopped);
  await append(
    session,
    tokenizer,
    [
      { text: before, special: false },
      { text: syntax.beforeName, special },
    ],
    options,
  );
  const names = Object.keys(functions);
  const named = await session.generate([], {
    ...options,
    maxTokens: NAME_TOKENS,
    grammar: { type: 'regex', pattern: names.map(escapeRegex).join('|') },
  });
  if (named.stopReason === 'abort') return undefined;
  const name = named.text;
  if (named.stopReason !== 'grammarComplete' || !Object.hasOwn(functions, name)) {
    throw new Error(
      `The model's function call did not name a function in ${NAME_TOKENS} tokens (it wrote ${JSON.stringify(name)}; stopped by ${named.stopReason})`,
    );
  }
  await append(session, tokenizer, [{ text: syntax.betweenNameAndParams, special }], options);
  const written = await session.generate([], {
    ...options,
    maxTokens: PARAMS_TOKENS,
    grammar: { type: 'json', schema: paramsSchema(functions[name]) },
  });
  if (written.stopReason === 'abort') return undefined;
  if (written.stopReason !== 'grammarComplete') {
    throw new Error(`The model's call of ${name} did not finish its parameters in ${PARAMS_TOKENS} tokens (stopped by ${written.stopReason})`);
  }
  await append(session, tokenizer, [{ text: syntax.afterParams, special }], options);
  return {
    name,
    params: JSON.parse(written.text) as Record<string, unknown>,
    rawCall: syntax.beforeName + name + syntax.betweenNameAndParams + written.text + syntax.afterParams,
  };
}

/** The generation that starts another call in the same message (its trigger within a few tokens), or undefined. */
export async function anotherCall(session: Session, syntax: CallSyntax, options: GenerateOptions): Promise<GenerationResult | undefined> {
  const next = await session.generate([], { ...options, maxTokens: 4, customStopTriggers: [syntax.trigger] });
  return next.stopReason === 'customStopTrigger' ? next : undefined;
}

/** A handler's result as the model reads it: text as it is, anything else as JSON. */
export function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  return JSON.stringify(result) ?? 'void';
}

/** Runs the calls' handlers in order; a handler that throws fails the prompt. */
export async function runCalls(
  calls: readonly { name: string; params: Record<string, unknown>; rawCall: string }[],
  functions: ChatSessionFunctions,
): Promise<FunctionCallItem[]> {
  const items = returnedCalls(calls, functions);
  for (const item of items) item.result = await functions[item.name].handler(item.params);
  return items;
}

/** The calls as a reply that returns them gives them: no handler run, no result. */
export function returnedCalls(
  calls: readonly { name: string; params: Record<string, unknown>; rawCall: string }[],
  functions: ChatSessionFunctions,
): FunctionCallItem[] {
  return calls.map((call) => {
    const description = functions[call.name].description;
    return {
      type: 'functionCall',
      name: call.name,
      ...(description !== undefined && { description }),
      params: call.params,
      result: undefined,
      rawCall: call.rawCall,
    };
  });
}

/** The history's messages for an assistant message's calls: the message with tool_calls, then a tool message per result. */
export function callMessages(content: string, items: readonly FunctionCallItem[]): ChatMessage[] {
  const toolCalls: ChatToolCall[] = items.map((i) => ({ type: 'function', function: { name: i.name, arguments: i.params } }));
  return [
    { role: 'assistant', content, tool_calls: toolCalls },
    ...items.map((i): ChatMessage => ({ role: 'tool', name: i.name, content: resultText(i.result) })),
  ];
}

/**
 * For a template without calls (the generic syntax): each assistant
 * message with calls, its results and the assistant message after them
 * as one assistant message whose text has the calls and results in the
 * generic syntax, as the reply's sequence held them.
 */
export function mergeGenericCalls(messages: readonly ChatMessage[], syntax: CallSyntax): ChatMessage[] {
  const out: ChatMessage[] = [];
  let open: ChatMessage | undefined; // the merged message that the next assistant text continues
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      let content = m.content;
      for (const call of m.tool_calls) {
        const result = messages[i + 1]?.role === 'tool' ? messages[++i].content : '';
        content += `${syntax.beforeName}${call.function.name}${syntax.betweenNameAndParams}${pythonJson(call.function.arguments)}${syntax.afterParams}${genericResultText(result)}`;
      }
      if (open) open.content += content;
      else out.push((open = { role: 'assistant', content }));
    } else if (m.role === 'assistant' && open) {
      open.content += m.content;
      open = undefined;
    } else {
      open = undefined;
      out.push({ ...m });
    }
  }
  return out;
}

/** JSON with Python's json.dumps separators (", " and ": "): how the call grammar writes parameters. */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
