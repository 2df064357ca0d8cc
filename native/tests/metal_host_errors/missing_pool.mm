// A deliberate mistake scripts/check-metal.sh must reject: a command buffer
// made outside @autoreleasepool is autoreleased into a pool that never
// drains on Node's threads, and leaks with every buffer it binds.
#import <Metal/Metal.h>

namespace md::metal {

id<MTLCommandBuffer> _Nullable md_test_next_commands(id<MTLCommandQueue> queue) {
  return [queue commandBuffer];  // BUG: no @autoreleasepool
}

}  // namespace md::metal
