// mapped_file.h: a whole file mapped read-only into memory. The weights
// are views into it: the kernel pages them in on first use and may drop
// them under memory pressure, so loading copies nothing. The descriptor
// stays open, so that a change to the file after it was mapped can be
// seen (changed()) before a read of the mapping runs past a truncated end.
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
  const std::string& path() const { return path_; }

  // Empty while the file holds what was mapped (the same size and
  // modification time on the open descriptor); else why, naming the file.
  // Replacing the path by a rename is no change: the descriptor and the
  // mapping keep the file that was opened.
  std::string changed() const;

  // Reads one byte of every page of [begin, end) (clamped to the file), so
  // the first token does not wait for the disk. Returns the bytes covered.
  uint64_t prefetch(uint64_t begin, uint64_t end) const;

  // Lets the kernel drop the pages wholly inside [p, p + bytes) from this
  // process's memory (a copy of them is what is read now: repacked
  // weights); a later read of them pages them in again from the file.
  void release(const uint8_t* p, size_t bytes) const;

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int64_t mtimeSeconds_ = 0, mtimeNanoseconds_ = 0;
};

}  // namespace md
