// Which sanitizer a test binary was built with, for the few tests that must run differently
// under it (GCC defines __SANITIZE_THREAD__, clang answers __has_feature).
#ifndef VCLOCK_TESTS_SUPPORT_SANITIZERS_H_
#define VCLOCK_TESTS_SUPPORT_SANITIZERS_H_

#if defined(__SANITIZE_THREAD__)
#  define VCLOCK_TEST_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define VCLOCK_TEST_TSAN 1
#  endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#  define VCLOCK_TEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define VCLOCK_TEST_ASAN 1
#  endif
#endif

#endif  // VCLOCK_TESTS_SUPPORT_SANITIZERS_H_
