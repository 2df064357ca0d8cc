// Metal.h (stub): only the Metal API native/metal/metal_device.mm uses,
// written by this project from Apple's public documentation
// (developer.apple.com/documentation/metal) so that the .mm file can be
// type-checked on Linux. Not Apple's header; on macOS the real SDK is used.
// Nullability, ownership and availability follow the SDK (see
// Foundation.h); enum values are not relied on.
#pragma once
#import <Foundation/Foundation.h>

NS_ASSUME_NONNULL_BEGIN

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;

static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

typedef NSUInteger MTLResourceOptions;
enum { MTLResourceStorageModeShared = 0 };

typedef NSInteger MTLGPUFamily;
enum { MTLGPUFamilyApple7 = 1007 };  // M1 and later

#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 150000  // the macOS 15 SDK (Xcode 16) added these
typedef NSInteger MTLMathMode;
enum { MTLMathModeSafe = 0, MTLMathModeRelaxed = 1, MTLMathModeFast = 2 };

typedef NSInteger MTLMathFloatingPointFunctions;
enum { MTLMathFloatingPointFunctionsFast = 0, MTLMathFloatingPointFunctionsPrecise = 1 };
#endif

typedef NSUInteger MTLCommandBufferStatus;
enum {
  MTLCommandBufferStatusNotEnqueued = 0,
  MTLCommandBufferStatusEnqueued = 1,
  MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3,
  MTLCommandBufferStatusCompleted = 4,
  MTLCommandBufferStatusError = 5,
};

@protocol MTLResource <NSObject>
@end

@protocol MTLBuffer <MTLResource>
- (void*)contents NS_RETURNS_INNER_POINTER;
@property(readonly) NSUInteger length;
@end

@protocol MTLFunction <NSObject>
@end

@protocol MTLLibrary <NSObject>
- (nullable id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
@property(readonly) NSArray<NSString*>* functionNames;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@end

@protocol MTLCommandEncoder <NSObject>
- (void)endEncoding;
@property(nullable, copy, atomic) NSString* label;
@end

// How each encoder of a failed command buffer ended (macOS 11): asked for
// with MTLCommandBufferErrorOptionEncoderExecutionStatus, listed under
// MTLCommandBufferEncoderInfoErrorKey in the error's userInfo.
typedef NSUInteger MTLCommandBufferErrorOption;
enum { MTLCommandBufferErrorOptionNone = 0, MTLCommandBufferErrorOptionEncoderExecutionStatus = 1 };

typedef NSInteger MTLCommandEncoderErrorState;
enum {
  MTLCommandEncoderErrorStateUnknown = 0,
  MTLCommandEncoderErrorStateCompleted = 1,
  MTLCommandEncoderErrorStateAffected = 2,
  MTLCommandEncoderErrorStatePending = 3,
  MTLCommandEncoderErrorStateFaulted = 4,
};

API_AVAILABLE(macos(11.0))
@interface MTLCommandBufferDescriptor : NSObject
@property(readwrite, nonatomic) MTLCommandBufferErrorOption errorOptions;
@end

API_AVAILABLE(macos(11.0))
@protocol MTLCommandBufferEncoderInfo <NSObject>
@property(readonly, nonatomic) NSString* label;
@property(readonly, nonatomic) MTLCommandEncoderErrorState errorState;
@end

extern "C" NSErrorUserInfoKey const MTLCommandBufferEncoderInfoErrorKey API_AVAILABLE(macos(11.0));

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBuffer:(nullable id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
@end

@protocol MTLCommandBuffer;
typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer> buffer);

@protocol MTLCommandBuffer <NSObject>
- (nullable id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)commit;
- (void)waitUntilCompleted;
@property(readonly) MTLCommandBufferStatus status;
@property(nullable, readonly) NSError* error;
@end

@protocol MTLCommandQueue <NSObject>
- (nullable id<MTLCommandBuffer>)commandBuffer;
- (nullable id<MTLCommandBuffer>)commandBufferWithDescriptor:(MTLCommandBufferDescriptor*)descriptor
    API_AVAILABLE(macos(11.0));
@end

@interface MTLCompileOptions : NSObject
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 150000
@property(readwrite, nonatomic) BOOL fastMathEnabled API_DEPRECATED("Use mathMode instead", macos(10.11, 15.0));
@property(readwrite, nonatomic) MTLMathMode mathMode API_AVAILABLE(macos(15.0));
@property(readwrite, nonatomic) MTLMathFloatingPointFunctions mathFloatingPointFunctions API_AVAILABLE(macos(15.0));
#else
@property(readwrite, nonatomic) BOOL fastMathEnabled;
#endif
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) NSUInteger maxThreadgroupMemoryLength API_AVAILABLE(macos(10.13));
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily API_AVAILABLE(macos(10.15));
- (nullable id<MTLCommandQueue>)newCommandQueue;
@property(readonly) NSUInteger maxBufferLength API_AVAILABLE(macos(10.14));
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (nullable id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                           length:(NSUInteger)length
                                          options:(MTLResourceOptions)options
                                      deallocator:(void (^_Nullable)(void* pointer, NSUInteger length))deallocator;
- (nullable id<MTLLibrary>)newLibraryWithSource:(NSString*)source
                                        options:(nullable MTLCompileOptions*)options
                                          error:(NSError* _Nullable* _Nullable)error;
- (nullable id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                                       error:(NSError* _Nullable* _Nullable)error;
@end

extern "C" {
id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void) API_AVAILABLE(macos(10.11));
NSArray<id<MTLDevice>>* MTLCopyAllDevices(void) NS_RETURNS_RETAINED API_AVAILABLE(macos(10.11));
}

NS_ASSUME_NONNULL_END
