// mapped_file_test.cpp: how a model file is mapped.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mapped_file.h"

namespace {

std::string writeTemporaryFile(const std::string& name, size_t bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  std::vector<char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = char(i * 7);
  out.write(data.data(), std::streamsize(bytes));
  return path;
}

#ifdef __linux__
// The permissions /proc/self/maps lists for the mapping holding `address`
// ("r--s": read-only and shared), or "" when none does.
std::string permissionsOfMappingAt(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    unsigned long begin = 0, end = 0;
    char permissions[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &begin, &end, permissions) == 3 && begin <= at && at < end)
      return permissions;
  }
  return "";
}
#endif

// The weights are a read-only shared mapping of the file, as llama.cpp
// maps them: Metal wraps the page cache's pages, not copy-on-write ones.
// (Linux's /proc shows the flags; the call is the same on macOS.)
TEST(MappedFile, MapsTheFileReadOnlyAndShared) {
  const std::string path = writeTemporaryFile("md_mapped_file_test.bin", 3 * 4096 + 5);
  md::MappedFile file(path);
  ASSERT_EQ(file.size(), 3u * 4096 + 5);
  EXPECT_EQ(file.data()[4096 + 3], uint8_t((4096 + 3) * 7));
#ifdef __linux__
  EXPECT_EQ(permissionsOfMappingAt(file.data()), "r--s");
#endif
  std::remove(path.c_str());
}

}  // namespace
