// mapped_file.h: a whole file mapped read-only into memory. The weights
// are views into it: the kernel pages them in on first use and may drop
// them under memory pressure, so loading copies nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace md {

class MappedFile {
 public:
  // Throws std::runtime_error naming the path and the system's reason.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

  // Reads one byte of every page of [begin, end) (clamped to the file), so
  // the first token does not wait for the disk. Returns the bytes covered.
  uint64_t prefetch(uint64_t begin, uint64_t end) const;

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace md
