// Foundation.h (stub): only what native/metal/metal_device.mm uses, written
// by this project from Apple's public documentation so that the .mm file
// can be type-checked with clang on Linux (scripts/check-metal.sh). Not
// Apple's header, never used to build: on macOS the real SDK is used.
//
// What the SDK says about each declaration, the stub says too, so the
// -Werror check fails where a Mac build would warn: nullability (a
// nullable result used unchecked), ownership (NS_RETURNS_RETAINED) and
// availability (an API newer than the deployment target used without
// @available, or one deprecated at it).
#pragma once
#include <stddef.h>
#include <stdint.h>

// The SDK these stubs stand for (Availability.h's macro): the newest by
// default; check-metal.sh also builds against an older one (-D...=140000),
// where the stubs leave out what that SDK lacks.
#ifndef __MAC_OS_X_VERSION_MAX_ALLOWED
#define __MAC_OS_X_VERSION_MAX_ALLOWED 260000
#endif

typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil nullptr
typedef unsigned long NSUInteger;
typedef long NSInteger;

#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))
#define NS_RETURNS_INNER_POINTER __attribute__((objc_returns_inner_pointer))

// API_AVAILABLE(macos(15.0)) and API_DEPRECATED("why", macos(10.11, 15.0)),
// as the SDK spells them (macOS only: the addon is for nothing else).
#define API_AVAILABLE(platform) MD_STUB_AVAILABLE_##platform
#define MD_STUB_AVAILABLE_macos(since) __attribute__((availability(macos, introduced = since)))
#define API_DEPRECATED(message, platform) MD_STUB_DEPRECATED_##platform  // the message is not kept
#define MD_STUB_DEPRECATED_macos(since, until) __attribute__((availability(macos, introduced = since, deprecated = until)))

NS_ASSUME_NONNULL_BEGIN

@protocol NSObject
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)new;
+ (instancetype)alloc;
- (instancetype)init;
@end

@interface NSString : NSObject
+ (nullable instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
@property(nullable, readonly) const char* UTF8String NS_RETURNS_INNER_POINTER;
@end

@interface NSArray<ObjectType> : NSObject
@property(readonly) NSUInteger count;
@property(nullable, readonly) ObjectType firstObject;
- (ObjectType)objectAtIndex:(NSUInteger)index;
@end

@interface NSDictionary<KeyType, ObjectType> : NSObject
- (nullable ObjectType)objectForKeyedSubscript:(KeyType)key;
@end

typedef NSString* NSErrorUserInfoKey;

@interface NSError : NSObject
@property(readonly, copy) NSString* localizedDescription;
@property(readonly, copy) NSDictionary<NSErrorUserInfoKey, id>* userInfo;
@end

NS_ASSUME_NONNULL_END
