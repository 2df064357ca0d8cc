// chat-tools.ts: OpenAI's `tools` and `tool_choice` as the chat session's
// functions. The server does not run tools: the reply ends with the calls
// the model wrote (the session's functionCalls: 'return'), the client runs
// them and sends the results back as tool messages, and the next request
// goes on from there.
import { FUNCTION_NAME, type ChatSessionFunctions } from '../chat/chat-functions.js';
import { isPlainObject } from '../predicates.js';
import { badField } from './http-error.js';

export interface RequestTools {
  /** The functions the model may call (undefined: none, or tool_choice 'none'). */
  functions: ChatSessionFunctions | undefined;
  /** The reply starts with a call (tool_choice 'required' or a function named). */
  force: boolean;
}

function notRun(): never {
  throw new Error('the server does not run tools: their calls go back to the client');
}

function toolFunctions(value: unknown): ChatSessionFunctions | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw badField('tools', "an array of { type: 'function', function: { name, description?, parameters? } }", value);
  if (value.length === 0) return undefined;
  // Entries, then an object of own properties: a tool may be named __proto__ or toString.
  const entries: [string, ChatSessionFunctions[string]][] = [];
  value.forEach((tool: unknown, i) => {
    const where = `tools[${i}]`;
    if (!isPlainObject(tool) || tool.type !== 'function' || !isPlainObject(tool.function)) {
      throw badField(where, "a tool { type: 'function', function: { name, description?, parameters? } }", tool);
    }
    const { name, description, parameters } = tool.function;
    if (typeof name !== 'string' || !FUNCTION_NAME.test(name)) {
      throw badField(`${where}.function.name`, 'a name of letters, digits, _ . - (64 at most, not starting with a digit)', name);
    }
    if (entries.some(([other]) => other === name)) throw badField(`${where}.function.name`, 'a name no other tool has', name);
    if (description !== undefined && typeof description !== 'string') throw badField(`${where}.function.description`, 'a string', description);
    if (parameters !== undefined && (!isPlainObject(parameters) || (parameters.type !== undefined && parameters.type !== 'object'))) {
      throw badField(`${where}.function.parameters`, "a JSON schema of type 'object'", parameters);
    }
    entries.push([
      name,
      { ...(description !== undefined && { description }), ...(parameters !== undefined && { params: parameters }), handler: notRun },
    ]);
  });
  return Object.fromEntries(entries);
}

/** The request's tools and tool_choice, checked. */
export function requestTools(tools: unknown, choice: unknown): RequestTools {
  const functions = toolFunctions(tools);
  if (choice === undefined || choice === null || choice === 'auto') return { functions, force: false };
  if (choice === 'none') return { functions: undefined, force: false };
  if (choice === 'required') {
    if (functions === undefined) throw badField('tool_choice', "'none' or 'auto' when no tools are given", choice);
    return { functions, force: true };
  }
  const named = isPlainObject(choice) && choice.type === 'function' && isPlainObject(choice.function) ? choice.function.name : undefined;
  if (typeof named !== 'string') {
    throw badField('tool_choice', "'none', 'auto', 'required' or { type: 'function', function: { name } }", choice);
  }
  if (functions === undefined || !Object.hasOwn(functions, named)) throw badField('tool_choice.function.name', 'the name of one of the tools', named);
  return { functions: Object.fromEntries([[named, functions[named]!]]), force: true };
}
