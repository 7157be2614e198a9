// The shim's exported definitions: libc's names, with default visibility
// (the library is built with every other symbol hidden: preload.map.in).
#ifndef VCLOCK_SRC_SHIM_EXPORT_H_
#define VCLOCK_SRC_SHIM_EXPORT_H_

#define VCLOCK_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

#endif  // VCLOCK_SRC_SHIM_EXPORT_H_
