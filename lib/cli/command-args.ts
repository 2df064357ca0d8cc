// command-args.ts: a command's options parsed with node's util.parseArgs,
// its errors as UsageError (the command prints them with its usage), and
// the number options checked.
import { parseArgs, type ParseArgsConfig } from 'node:util';

import { UsageError } from './bench-args.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** The options and positionals of `argv`; --help/-h is every command's. */
export function parseCommandArgs(
  argv: string[],
  options: OptionSpec,
  positionals = 0,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: positionals > 0,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  return { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
}

/** --name's number: an integer or decimal in [min, max], or undefined when not given. */
export function numberOption(
  values: Record<string, string | boolean | undefined>,
  name: string,
  min: number,
  max: number,
  integer = true,
): number | undefined {
  const text = values[name];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (typeof text !== 'string' || text.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
    throw new UsageError(`--${name}: expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** --name's text, required. */
export function requiredOption(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}
