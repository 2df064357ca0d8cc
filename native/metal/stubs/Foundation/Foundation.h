// Foundation.h (stub): only what native/metal/metal_device.mm uses, written
// by this project from Apple's public documentation so that the .mm file
// can be type-checked with clang on Linux (scripts/check-metal.sh). Not
// Apple's header, never used to build: on macOS the real SDK is used.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil nullptr
typedef unsigned long NSUInteger;
typedef long NSInteger;

@protocol NSObject
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)new;
+ (instancetype)alloc;
- (instancetype)init;
@end

@interface NSString : NSObject
+ (instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
@property(readonly) const char* UTF8String;
@end

@interface NSArray<ObjectType> : NSObject
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
@end

@interface NSError : NSObject
@property(readonly, copy) NSString* localizedDescription;
@end
