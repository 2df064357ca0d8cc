// inspect-command.ts: `metal-decode inspect FILE`: what a GGUF file is and
// what would run it here: its metadata, its tensors by type, each backend
// with why it can or cannot run, and the context 'auto' would pick.
import { getBackends } from '../backends.js';
import { readGgufHeader } from '../gguf/read-header.js';
import { loadModel } from '../gguf/load-model.js';
import { autoContextSize } from '../models/kv-cache-type.js';
import { loadAddon } from '../native/load-addon.js';
import { UsageError } from './bench-args.js';
import { parseCommandArgs } from './command-args.js';
import type { Output } from './output.js';

export const INSPECT_USAGE = `Usage: metal-decode inspect FILE [--json]

What a GGUF file holds and what would run it here: the architecture and
shape, the tokenizer and chat template, the tensors by type with their
bytes, every backend with why it can or cannot run, and the context size
'auto' picks (and its KV cache).

  --json      print it as JSON
  -h, --help  this text`;

export async function inspectCommand(argv: string[], stdout: Output): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, { json: { type: 'boolean' } }, 1);
  if (values.help) return (void stdout.write(`${INSPECT_USAGE}\n`), 0);
  const path = positionals[0];
  if (path === undefined) throw new UsageError('the .gguf file to inspect is required');
  const header = await readGgufHeader(path);
  const model = await loadModel(path, { vocabOnly: true });
  try {
    const addon = loadAddon();
    const byType = new Map<string, { tensors: number; bytes: number }>();
    const typeNames = addon.ok ? new Map(addon.addon.tensorTypes.map((t) => [t.id, t])) : new Map();
    for (const tensor of header.tensors) {
      const type = typeNames.get(tensor.type);
      const name = type?.name ?? `type ${tensor.type}`;
      const values = tensor.dims.reduce((a, b) => a * b, 1);
      const bytes = type ? (values / type.blockValues) * type.blockBytes : 0;
      const entry = byType.get(name) ?? { tensors: 0, bytes: 0 };
      byType.set(name, { tensors: entry.tensors + 1, bytes: entry.bytes + bytes });
    }
    const info = model.info;
    const auto = addon.ok ? autoContextSize(info.config, info.kvCacheType, addon.addon.tensorTypes, info.trainedContextLength) : undefined;
    const report = {
      path: info.path,
      architecture: info.architecture,
      name: info.name,
      fileSize: info.fileSize,
      config: info.config,
      trainedContextLength: info.trainedContextLength,
      tokenizer: { vocabulary: model.vocabSize, bosToken: model.bosToken, eosTokens: model.eosTokens },
      chatTemplate: model.chatTemplate !== undefined,
      tensors: Object.fromEntries(byType),
      // The forward pass runs on the GPU tables (metal, emulated) or the CPU (native); js has no transformer.
      backends: getBackends().map((b) =>
        b.name === 'js'
          ? { name: b.name, available: false, reason: "a GGUF model's forward pass is native code; there is no TypeScript transformer" }
          : { name: b.name, available: b.available, ...(!b.available && { reason: b.reason.split('\n')[0] }) },
      ),
      autoContext: auto,
    };
    if (values.json) {
      stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return 0;
    }
    const c = info.config;
    const lines = [
      `file:         ${info.path} (${info.fileSize} bytes)`,
      `model:        ${info.architecture}${info.name ? ` "${info.name}"` : ''}: ${c.blockCount} layers, d ${c.embeddingLength}, ${c.headCount} heads (${c.headCountKv} KV) of ${c.headDim}, FFN ${c.ffnLength}`,
      `context:      trained ${info.trainedContextLength ?? 'not given'}; 'auto' here: ${auto ? `${auto.contextSize} (${auto.reason})` : 'the addon did not load'}`,
      `tokenizer:    ${model.vocabSize} tokens, BOS ${model.bosToken ?? 'none'}, end tokens ${model.eosTokens.join(', ')}; chat template: ${report.chatTemplate ? 'yes' : 'none'}`,
      'tensors:',
      ...[...byType].map(
        ([name, { tensors, bytes }]) => `  ${name.padEnd(8)} ${String(tensors).padStart(5)} tensors ${String(bytes).padStart(14)} bytes`,
      ),
      'backends:',
      ...report.backends.map((b) => `  ${b.name.padEnd(8)} ${b.available ? 'runs here' : `not here: ${b.reason}`}`),
      `  'auto' picks ${report.backends.find((b) => b.name === 'metal')?.available ? 'metal' : 'native (metal does not run here)'}`,
    ];
    stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } finally {
    model.dispose();
  }
}
