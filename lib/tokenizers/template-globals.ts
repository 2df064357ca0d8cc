// template-globals.ts: a parsed chat template rendered with the globals
// @huggingface/jinja's Template.render sets (false, true, none, True, False,
// None, raise_exception, range, strftime_now), declared here because one
// of them must differ: the library's range() builds its whole list first,
// so range(100000000) allocates gigabytes in one array, and a single
// allocation that large ends the process even on a worker thread with a
// heap limit (Node lets a thread past its limit by only 16 MB while it
// stops it). Ours refuses more than MAX_RANGE_ITEMS, an error naming the call.
import { Environment, Interpreter, type Template } from '@huggingface/jinja';

/** More than any loop over a conversation needs (a history of 10,000 messages is long). */
export const MAX_RANGE_ITEMS = 1_000_000;

function range(...args: number[]): number[] {
  const call = `range(${args.join(', ')})`;
  let [start, stop] = args;
  const step = args[2] ?? 1;
  if (stop === undefined) [start, stop] = [0, start];
  for (const v of [start, stop, step]) if (!Number.isInteger(v)) throw new Error(`${call}: the arguments must be integers`);
  if (step === 0) throw new Error(`${call}: the step must not be zero`);
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (count > MAX_RANGE_ITEMS) throw new Error(`${call} has ${count} items, more than the ${MAX_RANGE_ITEMS} a chat template may loop over`);
  return Array.from({ length: count }, (_, i) => start + i * step);
}

const pad2 = (n: number) => String(n).padStart(2, '0');

// Python's strftime for the directives chat templates use (Llama 3.x prints the date), in local time.
function strftimeNow(format: string): string {
  const date = new Date();
  return format.replace(/%[YmdbBHM%]/g, (directive) => {
    switch (directive) {
      case '%Y':
        return String(date.getFullYear());
      case '%m':
        return pad2(date.getMonth() + 1);
      case '%d':
        return pad2(date.getDate());
      case '%b':
        return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(date);
      case '%B':
        return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(date);
      case '%H':
        return pad2(date.getHours());
      case '%M':
        return pad2(date.getMinutes());
      default:
        return '%';
    }
  });
}

/** `template` rendered with `variables` beside the globals above. */
export function renderWithGlobals(template: Template, variables: Readonly<Record<string, unknown>>): string {
  const env = new Environment();
  const globals: Record<string, unknown> = {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message));
    },
    range,
    strftime_now: strftimeNow,
  };
  // A variable named as a global is an error, as in Template.render ("Variable already declared").
  for (const [name, value] of [...Object.entries(globals), ...Object.entries(variables)]) env.set(name, value);
  return new Interpreter(env).run(template.parsed).value as string;
}
