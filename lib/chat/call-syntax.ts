// call-syntax.ts: how a model writes a function call, read from its own
// chat template. The template is rendered with a probe conversation (a
// user message, an assistant call of PROBE_FN, its result), and the call's
// text around the name and the parameters is what the model was trained to
// write: Qwen 2.5/3's `<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>`,
// Llama 3.1-3.3's `{"name": "f", "parameters": {...}}`. A template that
// does not render calls gets node-llama-cpp's generic syntax instead,
// `||call: f({...})` with `\n||result: ...\n` after it, explained to the
// model in a system message.
import type { ChatMessage, ChatTemplate } from '../tokenizers/chat-template.js';

export interface CallSyntax {
  /** 'template': calls and results are the template's (tool_calls, tool messages); 'generic': text in the reply. */
  kind: 'template' | 'generic';
  /** What the model writes to start a call (a stop trigger while it replies). */
  trigger: string;
  /** The call's text: before the function's name, between the name and the parameters' JSON, after it. */
  beforeName: string;
  betweenNameAndParams: string;
  afterParams: string;
  /** Whether one message may hold several calls (the template renders two). */
  parallel: boolean;
}

export const GENERIC_SYNTAX: CallSyntax = {
  kind: 'generic',
  trigger: '||call:',
  beforeName: '||call: ',
  betweenNameAndParams: '(',
  afterParams: ')',
  parallel: false,
};

/** The text a generic call's result adds to the reply. */
export function genericResultText(result: string): string {
  return `\n||result: ${result}\n`;
}

const FN = 'PROBE_FN',
  ARG = 'PROBE_ARG',
  VALUE = 'PROBE_VAL';

const probeTools = [
  { type: 'function', function: { name: FN, description: 'A probe.', parameters: { type: 'object', properties: { [ARG]: { type: 'string' } } } } },
];
const probeCall = (name: string) => ({ type: 'function' as const, function: { name, arguments: { [ARG]: VALUE } } });

/**
 * The syntax `template` renders calls in; GENERIC_SYNTAX when it renders
 * none (or fails on a call: a template without tool support).
 * `endTexts`: the texts of the model's end-of-generation tokens, where a
 * call's message ends.
 */
export async function detectCallSyntax(
  template: ChatTemplate,
  variables: Readonly<Record<string, unknown>> | undefined,
  endTexts: readonly string[],
): Promise<CallSyntax> {
  const user: ChatMessage = { role: 'user', content: 'PROBE_USER' };
  const render = (messages: ChatMessage[], addGenerationPrompt: boolean) =>
    template.renderAsync(messages, { addGenerationPrompt, variables: { ...variables, tools: probeTools } });
  let open: string, called: string;
  try {
    open = await render([user], true);
    called = await render(
      [user, { role: 'assistant', content: '', tool_calls: [probeCall(FN)] }, { role: 'tool', name: FN, content: 'PROBE_RESULT' }],
      false,
    );
  } catch {
    return GENERIC_SYNTAX;
  }
  if (!called.startsWith(open)) return GENERIC_SYNTAX;
  let message = called.slice(open.length);
  const end = Math.min(...endTexts.map((t) => message.indexOf(t)).filter((i) => i >= 0));
  if (Number.isFinite(end)) message = message.slice(0, end);
  const name = message.indexOf(FN);
  const params = /\{\s*"PROBE_ARG"\s*:\s*"PROBE_VAL"\s*\}/.exec(message);
  if (name < 0 || params === null || params.index < name) return GENERIC_SYNTAX;
  const beforeName = message.slice(0, name);
  // A marker on a line of its own (Qwen's <tool_call>) starts a call; else the call's whole opening (Llama's {"name": ").
  const trigger = (beforeName.includes('\n') ? beforeName.slice(0, beforeName.indexOf('\n')) : beforeName).trim();
  if (trigger === '') return GENERIC_SYNTAX;
  let parallel = false;
  try {
    const two = await render([user, { role: 'assistant', content: '', tool_calls: [probeCall(FN), probeCall(`${FN}2`)] }], false);
    parallel = two.includes(`${FN}2`);
  } catch {
    // Llama 3.1's template refuses two calls in one message.
  }
  return {
    kind: 'template',
    trigger,
    beforeName,
    betweenNameAndParams: message.slice(name + FN.length, params.index),
    afterParams: message.slice(params.index + params[0].length),
    parallel,
  };
}

/** The system message that explains the generic syntax and the functions (node-llama-cpp's, in this package's words). */
export function genericFunctionsText(tools: readonly unknown[]): string {
  return [
    'You can call functions to get information or act, instead of answering from what you know.',
    'Call a function when it helps, before answering, without announcing it.',
    'The functions, as JSON schemas of their parameters:',
    ...tools.map((t) => JSON.stringify((t as { function: unknown }).function)),
    '',
    'To call one, write exactly:',
    `${GENERIC_SYNTAX.beforeName}functionName({"param": "value"})`,
    'The || prefix is required. The result follows the call; use it in your answer in your own words.',
  ].join('\n');
}
