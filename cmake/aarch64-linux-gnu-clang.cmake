# The aarch64 build by clang (Apple's compiler is clang), with the
# libraries of Debian's GCC cross toolchain (g++-aarch64-linux-gnu): the
# GCC toolchain file's settings, clang for the compilers.
# scripts/test-native-cross.sh builds the tile-count program with it:
# the NEON tiles' instructions as clang emits them differ from GCC's.
include(${CMAKE_CURRENT_LIST_DIR}/aarch64-linux-gnu.cmake)
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
