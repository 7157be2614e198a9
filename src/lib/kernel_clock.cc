// Finds the vDSO's entry points by walking the ELF image the kernel maps
// into every process (AT_SYSINFO_EHDR), once, and calls them.
#include "lib/kernel_clock.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "vclock/detail/arch/cpu_features.h"
#include "vclock/detail/reader.h"

namespace vclock::kernel {
namespace {

using getres_fn = int (*)(clockid_t, timespec*);
using gettimeofday_fn = int (*)(timeval*, struct timezone*);

struct vdso_functions {
  gettime_fn gettime = nullptr;
  getres_fn getres = nullptr;
  gettimeofday_fn gettimeofday = nullptr;
};

// Looks `name` up in the vDSO's dynamic symbol table. The vDSO is tiny
// (a dozen symbols), so a linear scan is enough and needs no hash table.
void* find_symbol(const ElfW(Ehdr) * ehdr, const char* name) noexcept {
  const auto* base = reinterpret_cast<const char*>(ehdr);
  const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(base + ehdr->e_phoff);
  ElfW(Addr) load_offset = 0;
  const ElfW(Dyn)* dynamic = nullptr;
  bool have_load = false;
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    if (phdr[i].p_type == PT_LOAD && !have_load) {
      load_offset = reinterpret_cast<ElfW(Addr)>(base) + phdr[i].p_offset - phdr[i].p_vaddr;
      have_load = true;
    } else if (phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(base + phdr[i].p_offset);
    }
  }
  if (!have_load || dynamic == nullptr) {
    return nullptr;
  }
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Word)* hash = nullptr;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    const auto ptr = reinterpret_cast<const char*>(d->d_un.d_ptr + load_offset);
    if (d->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const ElfW(Sym)*>(ptr);
    if (d->d_tag == DT_STRTAB) strtab = ptr;
    if (d->d_tag == DT_HASH) hash = reinterpret_cast<const ElfW(Word)*>(ptr);
  }
  if (symtab == nullptr || strtab == nullptr || hash == nullptr) {
    return nullptr;
  }
  const ElfW(Word) count = hash[1];  // nchain == number of symbols
  for (ElfW(Word) i = 0; i < count; ++i) {
    const ElfW(Sym)& s = symtab[i];
    if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF) continue;
    if (std::strcmp(strtab + s.st_name, name) == 0) {
      return reinterpret_cast<void*>(s.st_value + load_offset);
    }
  }
  return nullptr;
}

vdso_functions lookup() noexcept {
  vdso_functions f;
  const auto ehdr = reinterpret_cast<const ElfW(Ehdr)*>(getauxval(AT_SYSINFO_EHDR));
  if (ehdr == nullptr || std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0) {
    return f;
  }
  // The names differ by architecture (x86-64 __vdso_*, arm64 __kernel_*).
  const arch::kernel_vdso_names& names = arch::kernel_vdso;
  f.gettime = reinterpret_cast<gettime_fn>(find_symbol(ehdr, names.clock_gettime));
  f.getres = reinterpret_cast<getres_fn>(find_symbol(ehdr, names.clock_getres));
  f.gettimeofday = reinterpret_cast<gettimeofday_fn>(find_symbol(ehdr, names.gettimeofday));
  return f;
}

// Filled once, before main() where possible; the lookup is idempotent and
// touches no shared state, so a racing first use from a signal handler just
// repeats it.
std::atomic<bool> looked_up{false};
vdso_functions functions;

const vdso_functions& vdso() noexcept {
  if (!looked_up.load(std::memory_order_acquire)) [[unlikely]] {
    const vdso_functions f = lookup();
    std::atomic_ref<gettime_fn>(functions.gettime).store(f.gettime, std::memory_order_relaxed);
    std::atomic_ref<getres_fn>(functions.getres).store(f.getres, std::memory_order_relaxed);
    std::atomic_ref<gettimeofday_fn>(functions.gettimeofday)
        .store(f.gettimeofday, std::memory_order_relaxed);
    looked_up.store(true, std::memory_order_release);  // pairs with the acquire above
  }
  return functions;
}

[[gnu::constructor]] void lookup_at_load() { vdso(); }

int raw_syscall_result(long r) noexcept { return r == -1 ? -errno : static_cast<int>(r); }

}  // namespace

int gettime(clockid_t clock, timespec* ts) noexcept {
  if (const auto f = vdso().gettime) return f(clock, ts);
  const int saved = errno;
  const int r = raw_syscall_result(syscall(SYS_clock_gettime, clock, ts));
  errno = saved;
  return r;
}

int getres(clockid_t clock, timespec* res) noexcept {
  if (const auto f = vdso().getres) return f(clock, res);
  const int saved = errno;
  const int r = raw_syscall_result(syscall(SYS_clock_getres, clock, res));
  errno = saved;
  return r;
}

int gettimeofday(timeval* tv, struct timezone* tz) noexcept {
  if (const auto f = vdso().gettimeofday) return f(tv, tz);
  const int saved = errno;
  const int r = raw_syscall_result(syscall(SYS_gettimeofday, tv, tz));
  errno = saved;
  return r;
}

namespace {
int or_errno(int r) noexcept {
  if (r == 0) return 0;
  errno = -r;
  return -1;
}
}  // namespace

int gettime_or_errno(clockid_t clock, timespec* ts) noexcept {
  return or_errno(gettime(clock, ts));
}

int gettimeofday_or_errno(timeval* tv, struct timezone* tz) noexcept {
  return or_errno(gettimeofday(tv, tz));
}

std::int64_t now_ns(clockid_t clock) noexcept {
  timespec ts{};
  const int r = gettime(clock, &ts);
  if (r != 0) return r;
  return ts.tv_sec * detail::ns_per_s + ts.tv_nsec;
}

bool has_vdso() noexcept { return vdso().gettime != nullptr; }

gettime_fn vdso_gettime() noexcept { return vdso().gettime; }

}  // namespace vclock::kernel
