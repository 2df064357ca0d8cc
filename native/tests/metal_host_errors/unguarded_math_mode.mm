// A deliberate mistake scripts/check-metal.sh must reject: mathMode exists
// from macOS 15 on, and the addon supports macOS 11.
#import <Metal/Metal.h>

void md_test_compile_options(MTLCompileOptions* options) {
  options.mathMode = MTLMathModeSafe;  // BUG: no @available(macOS 15.0, *) around it
}
