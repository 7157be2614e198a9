// The vclock data page: the one layout that the writer (the timekeeper) and
// every reader agree on. It is vclock's vvar: fixed layout, no pointers, so a
// later daemon can publish it through read-only shared memory.
#ifndef VCLOCK_PAGE_H_
#define VCLOCK_PAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace vclock {

inline constexpr std::uint64_t page_magic =
    0x00004b434f4c4356ULL;  // "VCLOCK\0\0" in little-endian bytes
// ABI of the page. The major changes when a field an existing reader uses
// moves or changes meaning: a reader refuses a page of another major. The
// minor grows when something is added in space that was reserved (zero) in
// the previous minor: a reader of an older minor ignores it, a newer
// reader checks abi_minor before using it. History: 1 offsets, 2 each
// clock's base, 3 the header (shared page, vclockd); 3.1 coarse_line.time_word
// and owner words; 3.2 the error bound (bound_line); 3.3 the history of
// lines (stamp_history), for stamps.
inline constexpr std::uint16_t page_abi_major = 3;
inline constexpr std::uint16_t page_abi_minor = 3;
inline constexpr std::uint32_t page_bytes = 4096;

// Why the page cannot answer from the counter (page::mode_reason).
enum class fallback_reason : std::uint32_t {
  none = 0,                      // counter mode: the page answers
  not_started = 1,               // the timekeeper has not published yet
  calibrating = 2,               // calibration in progress; the kernel answers
  disabled = 3,                  // VCLOCK_DISABLE=1
  no_invariant_tsc = 4,          // CPUID says the counter rate is not constant
  kernel_distrusts_counter = 5,  // the kernel's clocksource is not the TSC
  counter_jumped = 6,            // the counter moved in a way real time cannot
  counter_rate_wrong = 7,        // the counter rate disagrees with the kernel's
  unsupported_arch = 8,          // no usable counter on this architecture
  timekeeper_failed = 9,         // the timekeeper could not start (thread, fd)
  counter_too_slow = 10,         // below the rate the arch's fixed shift allows
  daemon_stopped = 11,           // vclockd exited cleanly (it turns its page off)
};

// page_header: what a reader validates before it uses a page it did not
// write (a page published by vclockd, read through a read-only mapping).
// Written once, when the file is created, except writer_pid (each daemon
// start). Every field has a fixed offset within every ABI major 3 page; a
// foreign reader (another language, another version) can check it with no
// code of ours.
//
//   magic          page_magic: "VCLOCK" and two zero bytes.
//   abi_major      page_abi_major: refuse the page if it differs.
//   abi_minor      page_abi_minor of the writer: fields added by a later
//                  minor are zero in an earlier one; ignore what you do not
//                  know.
//   header_size    sizeof(page_header) (128).
//   page_size      the whole page, bytes (4096): the file is exactly this
//                  long and never shrinks.
//   creator_uid    the uid that created the file (the daemon's user).
//   writer_pid     the pid of the daemon now writing it (0: none yet).
//   flags          page_flag_*.
//   boot_id        /proc/sys/kernel/random/boot_id, as 16 bytes: a page
//                  from another boot describes a counter that was reset.
//   counter_vendor CPUID vendor string ("GenuineIntel", "AuthenticAMD"),
//                  NUL-padded; empty where the counter is not a TSC.
//   counter_signature CPUID leaf 1 EAX (family, model, stepping).
//   counter_nominal_hz the counter's nominal frequency where the CPU or
//                  the hypervisor tells it (CPUID 0x15 or 0x40000010); 0
//                  where unknown. Information: the rate in use is measured.
inline constexpr std::uint32_t page_flag_shared = 1;  // published by vclockd

struct alignas(64) page_header {
  std::uint64_t magic;
  std::uint16_t abi_major;
  std::uint16_t abi_minor;
  std::uint32_t header_size;
  std::uint32_t page_size;
  std::uint32_t creator_uid;
  std::int32_t writer_pid;
  std::uint32_t flags;
  std::uint8_t boot_id[16];
  char counter_vendor[16];
  std::uint32_t counter_signature;
  std::uint32_t reserved0;
  std::uint64_t counter_nominal_hz;
  std::uint8_t reserved[128 - 80];
};

// clock_line: everything one fine clock read needs, in one 64-byte line.
//
// All fields are written by the timekeeper only, between write_begin() and
// write_end() on `seq` (detail/seqlock.h); readers load them as relaxed or
// acquire atomics through std::atomic_ref. Times are nanoseconds, counter
// values are raw counter ticks.
//
//   seq          seqlock sequence; odd while the writer is changing the line.
//   mult         MONOTONIC ns per tick, as a fixed-point number: ns =
//                (delta * mult) >> shift.
//   cycle_last   counter value at which mono_ns and raw_ns were taken.
//   max_delta    ticks past cycle_last for which these parameters are valid.
//                delta * mult and delta * raw_mult fit in 64 bits for every
//                delta < max_delta (the writer proves it: choose_mult_shift).
//                0 means "do not use": not calibrated, fallback, or frozen.
//                A reader whose delta is >= max_delta (unsigned; a counter
//                behind cycle_last wraps to a huge delta) leaves the fast
//                path, so this one comparison is the clamp, the staleness
//                bound and the mode check together.
//   mono_ns      CLOCK_MONOTONIC at cycle_last. Never decreases.
//   realtime_ns  CLOCK_REALTIME at cycle_last: mono_ns plus the kernel's
//                offs_real, which the writer keeps (and steps as the
//                kernel's REALTIME steps).
//   boottime_ns  CLOCK_BOOTTIME at cycle_last: mono_ns plus the time spent
//                suspended, an offset that never decreases.
//                Each clock's time is stored, not its offset from MONOTONIC:
//                a reader then adds one value to the elapsed time, and the
//                split of a timespec read into seconds starts from a load,
//                not from a sum (docs/performance.md, "Why the code is shaped so").
//   raw_ns       CLOCK_MONOTONIC_RAW at cycle_last. Never decreases.
//   raw_mult     MONOTONIC_RAW ns per tick, same shift.
//   shift        fixed-point shift for mult and raw_mult (<= 32).
//   tai_offset_s CLOCK_TAI - CLOCK_REALTIME, whole seconds (the kernel keeps
//                it as an int; 37 s since 2017). Whole seconds: a TAI
//                timespec is REALTIME's with tai_offset_s added to tv_sec.
struct alignas(64) clock_line {
  std::uint32_t seq;
  std::uint32_t mult;
  std::uint64_t cycle_last;
  std::uint64_t max_delta;
  std::int64_t mono_ns;
  std::int64_t realtime_ns;
  std::int64_t boottime_ns;
  std::int64_t raw_ns;
  std::uint32_t raw_mult;
  std::uint8_t shift;
  std::uint8_t reserved;
  std::int16_t tai_offset_s;
};

// coarse_line: the coarse clocks, precomputed at every publish so that a
// coarse read is a few loads: no counter, no multiply, no division. Same
// seqlock protocol as clock_line. The values equal the hot line's bases
// (mono_ns and realtime_ns) at the same publish.
//   valid      nonzero while the line may be used, 0 while the page is off:
//              what ABI 3.0 readers check (the writer stores the owner word
//              here too).
//   time_word  (ABI 3.1) time(2) as one load, no seqlock (an aligned word
//              cannot tear), as the vDSO's time() is: REALTIME's whole
//              seconds << 32 | the owner word (the low half, first in
//              memory); 0 while the line is off. 3.1 readers check its
//              owner word, for every coarse clock, instead of `valid`.
// The owner word: the coarse clocks read no counter, so unlike the hot
// line they cannot go stale by themselves when their writer dies. vclockd
// writes its thread id there and registers that 32-bit word on its robust
// futex list (set_robust_list(2)): when it dies, even by SIGKILL, the
// kernel sets FUTEX_OWNER_DIED in it (and clears the id), and readers go to
// the careful path, which goes to the kernel once the hot line is stale
// too. It is alive when it is 1..2^30-1 (a thread id, or 1 for an
// in-process writer); 0, FUTEX_OWNER_DIED (bit 30) or FUTEX_WAITERS (bit
// 31) make it dead. (A stopped or hung daemon is not dead: see
// docs/vclockd.md, Known limits.)
inline constexpr std::uint32_t coarse_owner_in_process = 1;
[[gnu::always_inline]] constexpr bool coarse_owner_alive(std::uint32_t word) noexcept {
  return word - 1u < 0x3fffffffu;  // 0 wraps to the top: one compare
}

struct alignas(64) coarse_line {
  std::uint32_t seq;
  std::uint32_t valid;
  std::int64_t mono_ns;
  std::int64_t realtime_ns;
  std::int64_t mono_sec;
  std::int64_t mono_nsec;
  std::int64_t realtime_sec;
  std::int64_t realtime_nsec;
  std::uint64_t time_word;
};

// Synchronisation status of the error bound: the values of vclock.h's
// VCLOCK_SYNC_*.
enum class sync_status : std::uint32_t {
  unknown = 0,       // no bound (no source, a stale page, past the void point)
  synced = 1,        // the source vouches for its error
  free_running = 2,  // the source stopped answering: its error grows at its drift
  unsynced = 3,      // the kernel (or source) says the clock is not synchronised
  disrupted = 4,     // REALTIME was stepped or the machine resumed: until the source confirms
};

// Where the bound's source error comes from (status only).
enum class bound_source_kind : std::uint32_t { none = 0, kernel = 1, chrony = 2, fake = 3 };

// bound_line (ABI 3.2): the error bound of REALTIME (and TAI), written with
// each update of `hot`, under hot's seq. At counter value c past
// hot.cycle_last (delta = c - cycle_last), the true time lies within
//   vclock's REALTIME +- (bound_ns + (delta * growth_mult >> growth_shift))
// as long as delta < void_delta; past it, the status is unknown. The writer
// chooses growth_shift so that delta * growth_mult < 2^64 for every delta
// below void_delta (bound_math.h), and rounds growth_mult up.
//   bound_ns       the half-width at cycle_last: the source's error at its
//                  last measurement grown to cycle_last, vclock's own
//                  deviation from the kernel (the page's lead and lag), the
//                  source's quantisation.
//   growth_mult    the growth per tick, << growth_shift: the source's drift
//                  plus the largest rate by which vclock may drift from the
//                  kernel (its slew bound), in ns per counter tick.
//   void_delta     ticks past cycle_last after which the source's last
//                  measurement is too old to vouch for anything; never
//                  above hot.max_delta (0 while the page is off), so a
//                  bounded reader's one compare covers staleness too.
//   status         sync_status.
//   source         bound_source_kind (status only).
//   source_error_ns, source_drift_ppb: the source's figures as last read
//                  (status only).
struct alignas(64) bound_line {
  std::uint32_t status;
  std::uint32_t source;
  std::uint32_t growth_shift;
  std::uint32_t pad;
  std::int64_t bound_ns;
  std::uint64_t growth_mult;
  std::uint64_t void_delta;
  std::int64_t source_error_ns;
  std::int64_t source_drift_ppb;
  std::int64_t reserved;
};

// stamp_history (ABI 3.3): the lines the hot line held lately, so that a
// counter value read earlier (a stamp, vclock.h) converts to the very time
// the fast path gave at it (docs/stamps.md). One seqlock (`seq`) covers it
// all. The writer sets `open` while hot is odd (before the new line is
// stored) and appends the update's entry once hot is even again, with the
// counter value it read then (the update's end): readers of the history
// wait while `open` or hot's seq is odd, so a stamp read on the new line
// always finds it.
//
// Each update is one entry, numbered from 0 (`entries` so far, on this
// page). Entry e lives in slots[e % history_slots] as one 64-bit word:
//   an ordinary update: bits 0-25 the ticks from the previous entry's
//     cycle_last (delta), 26-35 `run` in units of 16 ticks (rounded up),
//     36-51 the change of mult, 52-63 of raw_mult (two's complement;
//     mult's change is never -2^15, the key mark). Every base is the
//     previous line evaluated at the new cycle_last, bit for bit as the
//     fast path does (delta_to_ns; realtime and boottime with mult), and
//     the previous line froze exactly there (the backup line's switch
//     point).
//   a key (any other update: a step, a resync, an offset or max_delta
//     change, a switch point moved, a field that does not fit, and one
//     every history_key_every entries): bits 36-51 the key mark (2^15),
//     52-59 its position in keys[], 0-31 the freeze gap: the ticks from
//     the previous line's switch point to this line's cycle_last;
//     0xffffffff: none (the previous line was stale or off: its readers
//     asked the kernel).
// `run` (a key's `begin`): ticks from cycle_last to the update's end. A
// reader whose counter lies before it read the previous line (frozen at
// its switch point while the writer was mid-update); from it on, this one.
// keys[] is a ring of full lines; a key's entry is the newest slot marked
// with its position. A line is usable while its entry and every entry back
// to its key are still held: at least history_slots - history_key_every
// entries (1.024 s at the default 4 ms tick) as long as at most
// history_keys - 1 keys are taken in that span (two are the periodic ones:
// room for four steps a second).
//   epoch        the stamp epoch: boot-id hash << 32 | counter epoch (the
//                writer counts it up when the counter jumps); 0: none yet.
//   first_entry  the first entry of this epoch: older ones do not count.
inline constexpr std::uint32_t history_slots = 384;
inline constexpr std::uint32_t history_keys = 7;
inline constexpr std::uint32_t history_key_every = 128;
inline constexpr std::uint32_t history_key_mark = 0x8000;
inline constexpr std::uint32_t history_gap_none = 0xffffffffu;

struct alignas(64) history_header {
  std::uint32_t seq;
  std::uint32_t slot_count;  // history_slots
  std::uint64_t epoch;
  std::uint64_t entries;
  std::uint64_t first_entry;
  std::uint64_t keys;       // keys taken so far; the next goes to keys[keys % history_keys]
  std::uint32_t key_count;  // history_keys
  std::uint32_t open;       // 1 from before hot's switch until the entry is appended
  std::uint8_t reserved[64 - 48];
};

// A full line: clock_line's parameters, and `begin` (see above).
struct alignas(64) history_key {
  std::uint64_t cycle_last;
  std::uint64_t max_delta;
  std::int64_t mono_ns;
  std::int64_t realtime_ns;
  std::int64_t boottime_ns;
  std::int64_t raw_ns;
  std::uint32_t mult;
  std::uint32_t raw_mult;
  std::uint32_t begin;
  std::uint8_t shift;
  std::uint8_t reserved;
  std::int16_t tai_offset_s;
};

struct alignas(64) stamp_history {
  history_header header;
  history_key keys[history_keys];
  std::uint64_t slots[history_slots];
};

// The page: one 4 KiB page, lines in the order a reader needs them.
// Line `hot` is all the fine clocks read; line `coarse` all the coarse
// clocks read. Line `backup` holds the previous parameters, frozen at the
// counter value where the writer started the current update: a reader that
// finds `hot` odd (the writer is inside its update, perhaps preempted)
// answers from `backup` instead of spinning. The header comes first, where
// a foreign reader expects a magic number; the fallback line is read only
// by the careful path, the status line only by `vclock status`. The rest
// (ABI 3.3) is the history of lines, for stamps.
//
// Fallback floor: when the writer stops the counter path it sets
// hot.max_delta = 0 and leaves in mono_ns / raw_ns the largest time any
// reader can have been given (realtime_ns and boottime_ns keep their
// offsets from mono_ns). A kernel answer is then max(kernel, floor), so
// leaving the counter never steps a monotonic clock back.
struct alignas(4096) page {
  page_header header;  // lines 0-1: validated once, at attach
  clock_line hot;      // line 2: the fast path
  clock_line backup;   // line 3: used only while hot.seq is odd
  coarse_line coarse;  // line 4

  // Line 5: the careful path's. Cold.
  std::uint32_t mode_reason;      // fallback_reason; status only
  std::uint32_t ordering;         // counter_ordering in use; status only
  std::uint32_t counter_trusted;  // 1 if the trust checks passed; status only
  std::uint32_t pad1;
  // How far the page may be ahead of the kernel (last error + sample
  // width, >= 0): a reader that must ask the kernel while the page is stale
  // answers max(kernel + lead_ns, base), never below what the page gave.
  // 0 while the page is off (its floor already covers the lead).
  std::int64_t lead_ns;
  // How far the page may be behind the kernel (>= 0). A reader frozen on
  // the backup line while the writer is stalled mid-update answers
  // max(frozen time, kernel - lag_ns): it stands still, but never falls
  // further behind the kernel than the page itself would.
  std::int64_t lag_ns;
  // lead_ns and lag_ns change only while hot.seq is odd, so a reader of
  // hot validates them with hot's seq. Readers of the backup line (which
  // exist while hot is odd) use these copies, taken when the backup was
  // opened and stable until it is opened again.
  std::int64_t backup_lead_ns;
  std::int64_t backup_lag_ns;
  std::uint8_t pad2[64 - 48];

  // Line 6: timekeeper status, written with relaxed atomics, read by status.
  std::uint64_t counter_hz;          // calibrated counter frequency, Hz
  std::int64_t last_update_mono_ns;  // kernel MONOTONIC at the last publish
  std::int64_t last_error_mono_ns;   // vclock - kernel MONOTONIC, last sample
  std::int64_t last_error_raw_ns;    // vclock - kernel MONOTONIC_RAW
  std::int64_t last_bracket_ns;      // width of the last kernel sample
  std::uint64_t updates;             // publishes so far
  std::int64_t freq_ppb;             // MONOTONIC rate vs calibrated counter
  std::int64_t tick_ns;              // timekeeper period: the coarse resolution

  bound_line bound;  // line 7 (ABI 3.2): read by vclock_now_bounded only

  stamp_history history;  // lines 8-63 (ABI 3.3): read by stamp conversion only
};

static_assert(sizeof(page_header) == 128, "the header is two cache lines");
static_assert(offsetof(page_header, boot_id) == 32);
static_assert(offsetof(page_header, counter_nominal_hz) == 72);
static_assert(sizeof(clock_line) == 64, "a clock line is one cache line");
static_assert(sizeof(coarse_line) == 64, "the coarse line is one cache line");
static_assert(offsetof(clock_line, tai_offset_s) + sizeof(std::int16_t) == 64);
static_assert(offsetof(page, header) == 0 && offsetof(page, hot) == 128);
static_assert(offsetof(page, backup) == 192 && offsetof(page, coarse) == 256);
static_assert(offsetof(page, mode_reason) == 320 && offsetof(page, counter_hz) == 384);
static_assert(offsetof(page, bound) == 448 && sizeof(bound_line) == 64);
static_assert(sizeof(history_key) == 64 && sizeof(history_header) == 64);
static_assert(sizeof(stamp_history) == 4096 - 8 * 64, "the history fills the reserved space");
static_assert(offsetof(page, history) == 512);
static_assert(sizeof(page) == page_bytes, "the page is exactly one 4 KiB page");
static_assert(std::is_standard_layout_v<page> && std::is_trivially_copyable_v<page>);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint32_t>::is_always_lock_free);

}  // namespace vclock

#endif  // VCLOCK_PAGE_H_
