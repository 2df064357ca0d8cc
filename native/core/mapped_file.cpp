// mapped_file.cpp
#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace md {

MappedFile::MappedFile(const std::string& path) {
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
  void* p = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) throw std::runtime_error(path + ": cannot map (" + std::strerror(e) + ")");
  data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_t(size_));
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

}  // namespace md
