// kernel_usage.cpp: the process's record of dispatched kernels.
#include "kernel_usage.h"

#include <mutex>
#include <set>

namespace md {
namespace {

std::mutex& usageMutex() {
  static std::mutex* mutex = new std::mutex;  // never destroyed: devices may dispatch during exit
  return *mutex;
}
std::set<std::string>& usage() {
  static std::set<std::string>* pairs = new std::set<std::string>;
  return *pairs;
}

}  // namespace

void noteDispatchedKernel(const char* deviceKind, const std::string& kernel) {
  std::string key = std::string(deviceKind) + ":" + kernel;
  std::lock_guard<std::mutex> lock(usageMutex());
  usage().insert(std::move(key));
}

std::vector<std::string> dispatchedKernels() {
  std::lock_guard<std::mutex> lock(usageMutex());
  return std::vector<std::string>(usage().begin(), usage().end());
}

}  // namespace md
