// A planted mistake for scripts/check-metal.sh: a Metal 3.2 pragma with no
// version guard, which a macOS 13 or 14 compiler would ignore.
#include "md_kernel.h"
#pragma METAL fp contract(off)
