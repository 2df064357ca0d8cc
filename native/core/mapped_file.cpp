// mapped_file.cpp
#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <stdexcept>

namespace md {

namespace {

// The modification time of a stat, to the nanosecond where the system keeps it.
void modificationTime(const struct stat& st, int64_t* seconds, int64_t* nanoseconds) {
#if defined(__APPLE__)
  *seconds = int64_t(st.st_mtimespec.tv_sec);
  *nanoseconds = int64_t(st.st_mtimespec.tv_nsec);
#else
  *seconds = int64_t(st.st_mtim.tv_sec);
  *nanoseconds = int64_t(st.st_mtim.tv_nsec);
#endif
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(path + ": cannot stat (" + std::strerror(e) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": not a regular file");
  }
  size_ = uint64_t(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    throw std::runtime_error(path + ": the file is empty");
  }
  // Shared, as llama.cpp maps GGUF files: the pages are the page cache's own,
  // which Metal wraps as they are (newBufferWithBytesNoCopy); a private
  // mapping is copy-on-write memory whose pages the GPU driver would have to
  // treat as the process's anonymous memory. Read-only, so nothing is ever
  // written back.
  void* p = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(path + ": cannot map (" + std::strerror(e) + ")");
  }
  fd_ = fd;
  data_ = static_cast<const uint8_t*>(p);
  modificationTime(st, &mtimeSeconds_, &mtimeNanoseconds_);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_t(size_));
  if (fd_ >= 0) ::close(fd_);
}

std::string MappedFile::changed() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    return path_ + ": cannot stat the loaded file (" + std::strerror(errno) + "); load it again";
  if (uint64_t(st.st_size) < size_) {
    return path_ + ": the file was truncated to " + std::to_string(st.st_size) + " bytes after it was loaded (it had " +
           std::to_string(size_) + "); its weights cannot be read. Load it again";
  }
  int64_t seconds, nanoseconds;
  modificationTime(st, &seconds, &nanoseconds);
  if (uint64_t(st.st_size) != size_ || seconds != mtimeSeconds_ || nanoseconds != mtimeNanoseconds_) {
    return path_ + ": the file was written to after it was loaded (its size or modification time changed), so its " +
           "weights may not be the ones loaded. Load it again (replacing a model file by a rename, as downloads do, "
           "keeps " +
           "the loaded one valid)";
  }
  return "";
}

uint64_t MappedFile::prefetch(uint64_t begin, uint64_t end) const {
  end = std::min(end, size_);
  if (begin >= end) return 0;
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t alignedBegin = begin / page * page;
  ::madvise(const_cast<uint8_t*>(data_ + alignedBegin), size_t(end - alignedBegin), MADV_WILLNEED);
  volatile uint8_t sink = 0;
  for (uint64_t at = alignedBegin; at < end; at += page) sink = sink + data_[at];
  (void)sink;
  return end - begin;
}

void MappedFile::release(const uint8_t* p, size_t bytes) const {
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page, end = (uintptr_t(p) + bytes) / page * page;
  if (p < data_ || p + bytes > data_ + size_ || end <= begin) return;
  ::madvise(reinterpret_cast<void*>(begin), size_t(end - begin), MADV_DONTNEED);
}

}  // namespace md
