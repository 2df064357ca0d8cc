// kernel_counters_main.cpp: the decode kernels counted on the emulator.
//   md_kernel_counters [rows cols]   the matrix-vector kernel of every weight
//                                    type, as a Markdown table (bench/README.md)
//   md_kernel_counters --json        the counts `bench predict` models a token
//                                    from (bench/kernel-counts.json)
//   md_kernel_counters --check FILE  fails unless FILE is what --json prints
// Built by CMake with the tests (it needs the instrumented kernels).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "attention_counts.h"
#include "emulated_device.h"
#include "matvec_counts.h"
#include "random_weights.h"

namespace {

// The shapes the profile is counted at: a 4096-wide matrix (every type's
// blocks, 16 per lane), and Llama-3.2-1B's attention heads (32 query heads
// over 8 KV heads of 64) at 256 cached positions.
constexpr uint32_t kProfileRows = 64, kProfileCols = 4096;
constexpr md::counters::AttentionShape kProfileAttention{32, 8, 64, 256};

uint64_t fetched(const md::counters::AccessCounts& c) {
  uint64_t sum = 0;
  for (const auto& b : c.buffers) sum += b.bytesFetched;
  return sum;
}

void accessFields(std::ostringstream& out, const md::counters::AccessCounts& c) {
  out << "\"bytesFetched\": " << fetched(c) << ", \"bytesWritten\": " << c.deviceBytesWritten
      << ", \"loadInstructions\": " << c.loadInstructions << ", \"linesLoaded\": " << c.linesLoaded
      << ", \"bytesUsedLoading\": " << c.bytesUsedLoading << ", \"storeInstructions\": " << c.storeInstructions
      << ", \"linesStored\": " << c.linesStored;
}

// Integers only, one entry per line: the file is compared as text.
std::string profileJson(md::emu::EmulatedDevice& device) {
  std::ostringstream out;
  out << "{\n  \"generator\": \"build-cmake/md_kernel_counters --json\",\n  \"lineBytes\": " << md::counters::kLineBytes
      << ",\n  \"matvec\": {\n    \"rows\": " << kProfileRows << ",\n    \"cols\": " << kProfileCols
      << ",\n    \"types\": {\n";
  bool first = true;
  for (const TypeCase& t : kWeightTypes) {
    const auto c = md::counters::countMatvec(device, t.type, t.suffix, kProfileRows, kProfileCols);
    out << (first ? "" : ",\n") << "      \"" << t.suffix << "\": {\"weightBytes\": " << c.weightBytes
        << ", \"weightBytesFetched\": " << c.weights.bytesFetched << ", \"xBytesFetched\": " << c.x.bytesFetched
        << ", ";
    accessFields(out, c.all);
    out << "}";
    first = false;
  }
  const auto& s = kProfileAttention;
  const auto a = md::counters::countAttention(device, s);
  out << "\n    }\n  },\n  \"attention\": {\n    \"kernel\": \"md_attention_f16\",\n    \"heads\": " << s.heads
      << ",\n    \"kvHeads\": " << s.kvHeads << ",\n    \"headDim\": " << s.headDim
      << ",\n    \"kvLength\": " << s.kvLength << ",\n    \"kvBytes\": " << a.kvBytes
      << ",\n    \"kvBytesFetched\": " << a.keys.bytesFetched + a.values.bytesFetched
      << ",\n    \"kvLoadInstructions\": " << a.keys.loadInstructions + a.values.loadInstructions
      << ",\n    \"kvLinesLoaded\": " << a.keys.linesLoaded + a.values.linesLoaded << ",\n    ";
  accessFields(out, a.all);
  out << "\n  }\n}\n";
  return out.str();
}

int check(md::emu::EmulatedDevice& device, const char* path) {
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "md_kernel_counters --check: cannot read %s\n", path);
    return 1;
  }
  std::stringstream recorded;
  recorded << file.rdbuf();
  const std::string now = profileJson(device);
  if (recorded.str() == now) {
    std::printf("md_kernel_counters: %s holds today's counts\n", path);
    return 0;
  }
  std::istringstream a(recorded.str()), b(now);
  std::string lineA, lineB;
  for (int line = 1;; ++line) {
    const bool moreA = bool(std::getline(a, lineA)), moreB = bool(std::getline(b, lineB));
    if (!moreA && !moreB) break;
    if (lineA != lineB || moreA != moreB) {
      std::fprintf(
          stderr,
          "md_kernel_counters --check: %s line %d differs from the kernels' counts today:\n  file: %s\n  now:  %s\n",
          path, line, moreA ? lineA.c_str() : "(end)", moreB ? lineB.c_str() : "(end)");
      break;
    }
  }
  std::fprintf(stderr, "Record the new counts: build-cmake/md_kernel_counters --json > %s\n", path);
  return 1;
}

void table(md::emu::EmulatedDevice& device, uint32_t rows, uint32_t cols) {
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
}

}  // namespace

int main(int argc, char** argv) {
  md::emu::EmulatedDevice device(nullptr, 0, 1);  // one worker: the recorder counts one threadgroup at a time
  if (argc == 2 && std::strcmp(argv[1], "--json") == 0) {
    std::fputs(profileJson(device).c_str(), stdout);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--check") == 0) return check(device, argv[2]);
  const uint32_t rows = argc > 2 ? uint32_t(std::strtoul(argv[1], nullptr, 10)) : 64;
  const uint32_t cols = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 4096;
  if (argc == 2 || argc > 3 || rows == 0 || cols == 0 || cols % 256 != 0) {
    std::fprintf(stderr,
                 "usage: md_kernel_counters [rows cols] (rows > 0, cols a multiple of 256, every type's block)\n"
                 "       md_kernel_counters --json | --check FILE\n");
    return 2;
  }
  table(device, rows, cols);
  return 0;
}
