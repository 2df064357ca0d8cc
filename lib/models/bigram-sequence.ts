// bigram-sequence.ts: the bigram model as a ModelSequence. On a GPU device
// the sequence is the table-driven one (TableSequence) over a BigramChain:
// its token buffer is the state, the chain generates and samples on the
// GPU, and evaluate() is one forward step whose logits come back to the
// CPU. On the CPU the forward runs per token.
import { runsKernels, selectBackend } from '../backends.js';
import { sharedDevice } from '../gpu/device.js';
import type { Logits, ModelSequence } from '../generate/model.js';
import { TableSequence } from '../gpu/table-sequence.js';
import type { BackendChoice } from '../sampling-options.js';
import type { BigramWeights } from './bigram-weights.js';
import { BigramChain } from './bigram-gpu.js';

export function openBigramSequence(model: BigramWeights, options: { backend: BackendChoice; contextSize: number }): ModelSequence {
  const backend = selectBackend(options.backend);
  if (runsKernels(backend)) {
    return new TableSequence(new BigramChain(model, sharedDevice(backend), { contextSize: options.contextSize }));
  }
  return new BigramCpuSequence(model, backend, options.contextSize);
}

class BigramCpuSequence implements ModelSequence {
  readonly chain = undefined;

  constructor(
    readonly model: BigramWeights,
    readonly backend: 'native' | 'js',
    readonly contextSize: number,
  ) {}

  async evaluate(tokens: Uint32Array, _position: number): Promise<Logits> {
    // A bigram's logits depend on the last token alone.
    return this.model.logits(tokens[tokens.length - 1], this.backend);
  }

  async evaluateRows(tokens: Uint32Array, _position: number, rows: number): Promise<Logits[]> {
    return Array.from(tokens.subarray(tokens.length - rows), (token) => this.model.logits(token, this.backend));
  }

  dispose(): void {}
}
