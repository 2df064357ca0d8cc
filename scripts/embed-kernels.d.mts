// The types of embed-kernels.mjs, for the tests that import it.
/** The .metal files of the run-time source, in their order. */
export const KERNEL_FILES: readonly string[];
/** The run-time kernel source: the shared headers and every file of KERNEL_FILES. */
export function kernelSource(): string;
