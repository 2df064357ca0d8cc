#include "md_kernel.h"
// BUG: a misspelt kernel input attribute; C++ compilers only warn.
kernel void md_test_typo(device uint* out [[buffer(0)]], uint i [[thread_position_in_grip]]) { out[i] = 1; }
