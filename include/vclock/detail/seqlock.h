// The seqlock on a clock_line, written with C++ atomics so that it is
// data-race free under the C++ memory model (and TSan agrees) while
// compiling to plain moves on x86-64. Used by the reader (detail/reader.h)
// and the timekeeper (the only writer).
//
// Protocol (Boehm, "Can seqlocks get along with programming language memory
// models?", without fences so that TSan can follow it):
//   writer: seq = s+1 (RMW, full barrier); fields stored with release;
//           seq = s+2 (release).
//   reader: s1 = seq (acquire); fields loaded with acquire; s2 = seq.
// If a reader's acquire load of a field reads a value stored by a writer,
// that release store synchronises with it, so the writer's seq = s+1
// happens-before the reader's s2 load: s2 != s1 and the reader retries.
// On x86-64 every load is an acquire and every store a release, so none of
// this costs an instruction.
#ifndef VCLOCK_DETAIL_SEQLOCK_H_
#define VCLOCK_DETAIL_SEQLOCK_H_

#include <atomic>
#include <cstdint>

namespace vclock::detail {

template <class T>
[[gnu::always_inline]] inline T load(const T& field) noexcept {
  // atomic_ref needs a non-const object; the page is never written through
  // this reference.
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_acquire);
}

template <class T>
[[gnu::always_inline]] inline T load_relaxed(const T& field) noexcept {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}

template <class T>
inline void store(T& field, T value) noexcept {
  // Pairs with load() in readers: see the protocol above.
  std::atomic_ref<T>(field).store(value, std::memory_order_release);
}

template <class T>
inline void store_relaxed(T& field, T value) noexcept {
  std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

// Marks the line as being written. A full barrier (lock xadd on x86): the
// odd sequence is globally visible before anything the writer does next,
// including its counter read (see timekeeper's publish()).
inline std::uint32_t write_begin(std::uint32_t& seq) noexcept {
  return std::atomic_ref<std::uint32_t>(seq).fetch_add(1, std::memory_order_seq_cst) + 1;
}

// Pairs with the acquire load of seq in readers.
inline void write_end(std::uint32_t& seq, std::uint32_t odd_seq) noexcept {
  std::atomic_ref<std::uint32_t>(seq).store(odd_seq + 1, std::memory_order_release);
}

}  // namespace vclock::detail

#endif  // VCLOCK_DETAIL_SEQLOCK_H_
