// A deliberate mistake scripts/check-metal.sh must reject: fastMathEnabled
// is deprecated from macOS 15, where mathMode replaces it.
#import <Metal/Metal.h>

void md_test_compile_options(MTLCompileOptions* options) {
  options.fastMathEnabled = NO;  // BUG: deprecated, and not behind @available
}
