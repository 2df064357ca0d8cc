// resolve-model-file.ts: a model file from where it lives: a local path, an
// http(s) URL, or hf:user/repo/file.gguf (Hugging Face's resolve URL, at
// HF_ENDPOINT when set, as Hugging Face's own tools read it). Downloads go
// into a models directory as NAME.partial, resume with an HTTP range
// request, are checked against the SHA-256 the hub sends (its
// X-Linked-ETag, or an ETag of 64 hex digits), and only then take their
// name: a file under its final name is always whole.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import { AbortError, invalidParameterError } from '../errors.js';

export interface DownloadProgress {
  /** Bytes in the file so far (a resumed download starts at what it had). */
  downloaded: number;
  /** The file's size, when the server says. */
  total: number | undefined;
}

export interface ResolveModelFileOptions {
  /** Where downloads go. Default: METAL_DECODE_MODELS, else ~/.metal-decode/models. */
  directory?: string;
  onProgress?: (progress: DownloadProgress) => void;
  signal?: AbortSignal;
}

/** The models directory: METAL_DECODE_MODELS, else ~/.metal-decode/models. */
export function defaultModelsDirectory(): string {
  return process.env.METAL_DECODE_MODELS ?? join(homedir(), '.metal-decode', 'models');
}

/** Where `uri` is downloaded from, and the file name it gets; undefined for a local path. */
export function modelSource(uri: string): { url: string; fileName: string } | undefined {
  if (uri.startsWith('hf:')) {
    const parts = uri.slice(3).split('/');
    if (parts.length < 3 || parts.some((p) => p === '') || !uri.endsWith('.gguf')) {
      throw invalidParameterError('uri', 'hf:user/repo/file.gguf (the file may be in folders of the repo)', uri, 'range');
    }
    const [user, repo, ...path] = parts;
    const endpoint = (process.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
    return {
      url: `${endpoint}/${user}/${repo}/resolve/main/${path.map(encodeURIComponent).join('/')}`,
      fileName: `hf_${user}_${repo}_${path.join('_')}`,
    };
  }
  if (/^https?:\/\//i.test(uri)) {
    const name = basename(new URL(uri).pathname) || 'model.gguf';
    return { url: uri, fileName: name.replace(/[^A-Za-z0-9._-]/g, '_') };
  }
  return undefined;
}

/**
 * The local path of the model `uri` names: a local file as it is, or the
 * download (made, resumed or found whole) in the models directory.
 */
export async function resolveModelFile(uri: string, options: ResolveModelFileOptions = {}): Promise<string> {
  if (typeof uri !== 'string' || uri === '')
    throw invalidParameterError('uri', 'a .gguf path, an http(s) URL or hf:user/repo/file.gguf', uri, 'type');
  const source = modelSource(uri);
  if (source === undefined) {
    const path = resolve(uri);
    if (!existsSync(path)) throw invalidParameterError('uri', 'a file that exists, an http(s) URL or hf:user/repo/file.gguf', uri, 'range');
    return path;
  }
  const directory = options.directory ?? defaultModelsDirectory();
  const target = join(directory, source.fileName);
  if (existsSync(target)) return target;
  mkdirSync(directory, { recursive: true });
  await download(source.url, target, options);
  return target;
}

async function download(url: string, target: string, options: ResolveModelFileOptions): Promise<void> {
  const partial = `${target}.partial`;
  const have = existsSync(partial) ? statSync(partial).size : 0;
  let response: Response;
  let linked: string | undefined; // Hugging Face sends the SHA-256 on the redirect to its storage
  try {
    for (let at = url, hops = 0; ; hops++) {
      response = await fetch(at, { headers: have > 0 ? { Range: `bytes=${have}-` } : {}, signal: options.signal, redirect: 'manual' });
      linked ??= sha256Of(response.headers);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) break;
      if (hops === 10) throw new Error('more than 10 redirects');
      await response.body?.cancel();
      at = new URL(location, at).toString();
    }
  } catch (error) {
    if (options.signal?.aborted) throw new AbortError(options.signal.reason, 'The download was aborted');
    throw new Error(`Downloading ${url} failed: ${(error as Error).message}`, { cause: error });
  }
  // 206: the rest of the file after what .partial holds; 200: all of it (the server ignores ranges).
  const resumed = response.status === 206;
  if (!response.ok || response.body === null) {
    if (response.status === 416 && have > 0) rmSync(partial); // the partial file is not a start of this one
    throw new Error(`Downloading ${url} failed: HTTP ${response.status} ${response.statusText}`);
  }
  const start = resumed ? have : 0;
  const length = Number(response.headers.get('content-length') ?? NaN);
  const total = Number.isFinite(length) ? start + length : undefined;
  const expected = linked ?? sha256Of(response.headers);
  let downloaded = start;
  options.onProgress?.({ downloaded, total });
  const body = Readable.fromWeb(response.body as never);
  body.on('data', (chunk: Buffer) => {
    downloaded += chunk.length;
    options.onProgress?.({ downloaded, total });
  });
  try {
    await pipeline(body, createWriteStream(partial, { flags: resumed ? 'a' : 'w' }), { signal: options.signal });
  } catch (error) {
    if (options.signal?.aborted) throw new AbortError(options.signal.reason, 'The download was aborted; the next one resumes it');
    throw new Error(`Downloading ${url} failed after ${downloaded} bytes (the next download resumes): ${(error as Error).message}`, { cause: error });
  }
  if (total !== undefined && downloaded !== total) {
    throw new Error(`Downloading ${url} ended at ${downloaded} of ${total} bytes (the next download resumes)`);
  }
  if (expected !== undefined) {
    const actual = await sha256File(partial);
    if (actual !== expected) {
      rmSync(partial);
      throw new Error(`Downloading ${url}: the file's SHA-256 is ${actual}, and the server said ${expected}; it was deleted`);
    }
  }
  renameSync(partial, target);
}

// The SHA-256 a hub sends: Hugging Face's X-Linked-ETag for LFS files, or an ETag that is one.
function sha256Of(headers: Headers): string | undefined {
  for (const name of ['x-linked-etag', 'etag']) {
    const value = headers.get(name)?.replace(/^W\//, '').replace(/"/g, '').trim().toLowerCase();
    if (value !== undefined && /^[0-9a-f]{64}$/.test(value)) return value;
  }
  return undefined;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
