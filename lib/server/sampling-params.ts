// sampling-params.ts: an OpenAI request's sampling fields as generate()'s
// options, each checked with an error that names the field and the value.
// Fields left out take llama-server's defaults (temperature 0.8, top_k
// 40, top_p 0.95, min_p 0.05: SERVER_SAMPLING_DEFAULTS); the
// extra fields llama-server accepts (top_k, min_p, repeat_penalty,
// repeat_last_n) are read the same way.
import { isInteger, isPlainObject, isUint32 } from '../predicates.js';
import type { GenerateOptions } from '../generate/generate-options.js';
import { badField } from './http-error.js';

/** llama-server's defaults for the fields a request leaves out. */
export const SERVER_SAMPLING_DEFAULTS = Object.freeze({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 });

/** The most stop sequences a request may give (OpenAI allows 4; llama-server more). */
export const MAX_STOP_SEQUENCES = 16;
/** The most choices (`n`) a request may ask for: they run one after another. */
export const MAX_CHOICES = 8;

export interface SamplingFields {
  options: GenerateOptions;
  /** n: the choices to generate, each with the seed after the last one's. */
  choices: number;
  /** stream_options.include_usage: a last chunk with the usage. */
  streamUsage: boolean;
  stream: boolean;
}

function numberIn(body: Record<string, unknown>, name: string, min: number, max: number, describe: string): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw badField(name, describe, v);
  return v;
}

function integerIn(body: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (!isInteger(v) || (v as number) < min || (v as number) > max) throw badField(name, `an integer from ${min} to ${max}`, v);
  return v as number;
}

export function samplingFields(body: Record<string, unknown>, vocabSize: number): SamplingFields {
  const options: GenerateOptions = { ...SERVER_SAMPLING_DEFAULTS };
  const temperature = numberIn(body, 'temperature', 0, 2, 'a number from 0 to 2');
  if (temperature !== undefined) options.temperature = temperature;
  const topP = numberIn(body, 'top_p', 0, 1, 'a number from 0 to 1');
  // top_p 0 keeps the most probable token alone.
  if (topP !== undefined) Object.assign(options, topP === 0 ? { topK: 1, topP: 1 } : { topP });
  const topK = integerIn(body, 'top_k', 0, vocabSize);
  if (topK !== undefined) options.topK = topK;
  const minP = numberIn(body, 'min_p', 0, 1, 'a number from 0 to 1');
  if (minP !== undefined) options.minP = minP;
  const maxTokens = integerIn(body, 'max_completion_tokens', 1, 2 ** 31 - 1) ?? integerIn(body, 'max_tokens', 1, 2 ** 31 - 1);
  if (maxTokens !== undefined) options.maxTokens = maxTokens;
  const seed = body.seed;
  if (seed !== undefined && seed !== null) {
    if (!isUint32(seed)) throw badField('seed', 'an integer from 0 to 4294967295', seed);
    options.seed = seed as number;
  }
  const penalty = numberIn(body, 'repeat_penalty', 0, 10, 'a number from 0 to 10');
  const lastN = integerIn(body, 'repeat_last_n', 0, 1 << 20);
  const presence = numberIn(body, 'presence_penalty', -2, 2, 'a number from -2 to 2');
  const frequency = numberIn(body, 'frequency_penalty', -2, 2, 'a number from -2 to 2');
  if (penalty !== undefined || presence !== undefined || frequency !== undefined || lastN !== undefined) {
    options.repeatPenalty = {
      penalty: penalty ?? 1,
      lastTokens: lastN ?? 64,
      presencePenalty: presence ?? 0,
      frequencyPenalty: frequency ?? 0,
    };
  }
  const stop = body.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === 'string' ? [stop] : stop;
    if (!Array.isArray(list) || list.length > MAX_STOP_SEQUENCES || list.some((s) => typeof s !== 'string' || s === '')) {
      throw badField('stop', `a non-empty string or an array of at most ${MAX_STOP_SEQUENCES} of them`, stop);
    }
    options.customStopTriggers = list as string[];
  }
  const bias = body.logit_bias;
  if (bias !== undefined && bias !== null) {
    if (!isPlainObject(bias)) throw badField('logit_bias', 'an object of token ids to biases from -100 to 100', bias);
    const map = new Map<number, number>();
    for (const [key, value] of Object.entries(bias)) {
      const token = Number(key);
      if (!/^\d+$/.test(key) || token >= vocabSize) throw badField(`logit_bias.${key}`, `a token id from 0 to ${vocabSize - 1}`, key);
      if (typeof value !== 'number' || !Number.isFinite(value) || value < -100 || value > 100) {
        throw badField(`logit_bias.${key}`, 'a number from -100 to 100', value);
      }
      // OpenAI: -100 bans the token; other values are added to its logit.
      map.set(token, value <= -100 ? -Infinity : value);
    }
    options.logitBias = map;
  }
  const choices = integerIn(body, 'n', 1, MAX_CHOICES) ?? 1;
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw badField('stream', 'a boolean', stream);
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && !isPlainObject(streamOptions)) {
    throw badField('stream_options', 'an object', streamOptions);
  }
  const includeUsage = isPlainObject(streamOptions) ? streamOptions.include_usage : undefined;
  if (includeUsage !== undefined && typeof includeUsage !== 'boolean') throw badField('stream_options.include_usage', 'a boolean', includeUsage);
  return { options, choices, stream: stream === true, streamUsage: includeUsage === true };
}
