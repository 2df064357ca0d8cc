// cpu_features.cpp
#include "cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>

#include <cstdint>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace md {
namespace {

struct Features {
  bool avx2 = false, avxVnni = false, avx512Vnni = false, amx = false;
};

// Linux hands out AMX's large register state only on request.
bool requestAmxState() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

Features detect() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!(osxsave && avx && fma && f16c)) return f;
  const uint64_t xcr0 = xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return f;  // the OS saves XMM and YMM
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = (b >> 5) & 1;
  const bool avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
  f.avx512Vnni = f.avx2 && avx512f && avx512bw && avx512vl && vnni && (xcr0 & 0xE0) == 0xE0;
  const bool amxTile = (d >> 24) & 1, amxInt8 = (d >> 25) & 1;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxVnni = f.avx2 && ((a >> 4) & 1);
  f.amx = f.avx512Vnni && amxTile && amxInt8 && (xcr0 & 0x60000) == 0x60000 && requestAmxState();
  return f;
}

const Features& features() {
  static const Features f = detect();
  return f;
}

}  // namespace

bool cpuHasAvx2() { return features().avx2; }
bool cpuHasAvxVnni() { return features().avxVnni; }
bool cpuHasAvx512Vnni() { return features().avx512Vnni; }
bool cpuHasAmx() { return features().amx; }

}  // namespace md
#else
namespace md {
bool cpuHasAvx2() { return false; }
bool cpuHasAvxVnni() { return false; }
bool cpuHasAvx512Vnni() { return false; }
bool cpuHasAmx() { return false; }
}  // namespace md
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP_ASIMDFHM
#define HWCAP_ASIMDFHM (1 << 23)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif

namespace md {
bool cpuHasNeonFhm() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDFHM) != 0;
  return has;
}
bool cpuHasNeonI8mm() {
  static const bool has =
      (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 && cpuHasNeonFhm() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
  return has;
}
}  // namespace md
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>

namespace md {
namespace {
bool sysctlFlag(const char* name) {
  int value = 0;
  size_t size = sizeof value;
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}
}  // namespace

bool cpuHasNeonFhm() {
  // FEAT_FHM's name before macOS 12: hw.optional.armv8_2_fhm.
  static const bool has = sysctlFlag("hw.optional.arm.FEAT_FHM") || sysctlFlag("hw.optional.armv8_2_fhm");
  return has;
}
bool cpuHasNeonI8mm() {
  static const bool has =
      sysctlFlag("hw.optional.arm.FEAT_DotProd") && sysctlFlag("hw.optional.arm.FEAT_I8MM") && cpuHasNeonFhm();
  return has;
}
}  // namespace md
#else
namespace md {
bool cpuHasNeonFhm() { return false; }
bool cpuHasNeonI8mm() { return false; }
}  // namespace md
#endif
