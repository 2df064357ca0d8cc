// gpu-weights.ts: a GGUF model's tensors as device buffers, made once per
// model and device and shared by every GPU sequence of the model. Each
// tensor is a (buffer, offset) binding and the kernel suffix of its type
// (the addon's tensor type table: metal/md_blocks.h's list of types).
//
// Nothing is copied: each tensor is a read-only buffer over the file's
// mapping (device.mapFile: Metal's newBufferWithBytesNoCopy on the pages
// that hold it; the emulated device reads the same mapping, with the same
// 16 KB-aligned ranges and offsets, so the tests run what a Mac runs).
import { BackendUnavailableError } from '../errors.js';
import type { GpuBuffer, GpuDevice } from '../gpu/device.js';
import { tensorBytes } from '../gguf/tensor-bytes.js';
import type { NativeTensorEntry, NativeTensorType, NativeTransformer } from '../native/contract.js';

export interface GpuWeight {
  buffer: GpuBuffer;
  /** Bytes into the buffer where the tensor starts. */
  offset: number;
  /** The kernel suffix of the tensor's type. */
  suffix: string;
}

export interface WeightFile {
  path: string;
  /** The loaded model: the buffers wrap its own mapping of the file (else `path` is mapped anew, as tests do). */
  model?: NativeTransformer;
  tensors: readonly NativeTensorEntry[];
  /** The addon's tensor type table. */
  types: readonly NativeTensorType[];
}

export class GpuWeights {
  readonly #weights = new Map<string, GpuWeight>();
  readonly #buffers: GpuBuffer[] = [];
  /** The file's tensor table: what the forward graph is recorded over. */
  readonly tensors: readonly NativeTensorEntry[];

  constructor(
    readonly device: GpuDevice,
    file: WeightFile,
  ) {
    this.tensors = file.tensors;
    const suffixes = file.tensors.map((t) => {
      const type = file.types.find((x) => x.id === t.type);
      const suffix = type?.kernelSuffix;
      if (type === undefined || suffix === null || suffix === undefined) {
        const gpuTypes = file.types.filter((x) => x.kernelSuffix !== null).map((x) => x.name);
        throw new BackendUnavailableError(
          device.kind,
          `tensor ${t.name} is ${type?.name ?? `type ${t.type}`}, which has no GPU kernel (the GPU reads ${gpuTypes.join(', ')})`,
        );
      }
      return { suffix, length: tensorBytes(type, t.dims) };
    });
    const ranges = file.tensors.map((t, i) => ({ offset: t.offset, length: suffixes[i].length }));
    const mapped = file.model ? device.mapFile(file.model, ranges) : device.mapFile(file.path, ranges);
    file.tensors.forEach((t, i) => {
      this.#buffers.push(mapped[i].buffer);
      this.#weights.set(t.name, { buffer: mapped[i].buffer, offset: mapped[i].offset, suffix: suffixes[i].suffix });
    });
  }

  /** The tensor `name`; an error naming it when the file has none. */
  get(name: string): GpuWeight {
    const w = this.#weights.get(name);
    if (w === undefined) throw new Error(`the forward table needs tensor ${name}, which the file does not have`);
    return w;
  }

  /** The tensor `name`, or undefined (biases, norms and factors some architectures have). */
  find(name: string): GpuWeight | undefined {
    return this.#weights.get(name);
  }

  dispose(): void {
    for (const b of this.#buffers) b.dispose();
    this.#buffers.length = 0;
  }
}
