// A deliberate mistake scripts/check-metal.sh must reject: stringWithUTF8String
// returns nil for invalid UTF-8, and newLibraryWithSource takes no nil.
#import <Metal/Metal.h>

id<MTLLibrary> _Nullable md_test_compile(id<MTLDevice> device, const char* source) {
  return [device newLibraryWithSource:[NSString stringWithUTF8String:source] options:nil error:nil];  // BUG
}
