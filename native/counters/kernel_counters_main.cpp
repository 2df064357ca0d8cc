// kernel_counters_main.cpp: `md_kernel_counters [rows cols]`: the decode
// matrix-vector kernel of every weight type counted on the emulator, as a
// Markdown table (bench/README.md records it). Built by CMake with the
// tests (it needs the instrumented kernels: CMakeLists.txt).
#include <cstdio>
#include <cstdlib>

#include "emulated_device.h"
#include "matvec_counts.h"
#include "random_weights.h"

int main(int argc, char** argv) {
  const uint32_t rows = argc > 2 ? uint32_t(std::strtoul(argv[1], nullptr, 10)) : 64;
  const uint32_t cols = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 4096;
  if (rows == 0 || cols == 0 || cols % 256 != 0) {
    std::fprintf(stderr, "md_kernel_counters [rows cols]: rows > 0, cols a multiple of 256 (every type's block)\n");
    return 2;
  }
  md::emu::EmulatedDevice device(nullptr, 0, 1);  // one worker: the recorder counts one threadgroup at a time
  std::printf("md_matvec_* on a %u x %u matrix (random weights), %u-thread threadgroups\n\n", rows, cols, 128u);
  std::printf(
      "| type | weight bytes | weight bytes fetched / size | lane bytes / size | device load instructions | "
      "lines per load | load efficiency | x bytes fetched per weight byte | store efficiency |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatvec(device, t.type, t.suffix, rows, cols);
    std::printf("| %s | %llu | %.3f | %.3f | %llu | %.2f | %.1f%% | %.2f | %.1f%% |\n", t.suffix,
                (unsigned long long)c.weightBytes, double(c.weights.bytesFetched) / double(c.weightBytes),
                double(c.weights.bytesRead) / double(c.weightBytes), (unsigned long long)c.all.loadInstructions,
                double(c.all.linesLoaded) / double(c.all.loadInstructions ? c.all.loadInstructions : 1),
                100 * c.all.loadEfficiency(), double(c.x.bytesFetched) / double(c.weightBytes),
                100 * c.all.storeEfficiency());
  }
  return 0;
}
