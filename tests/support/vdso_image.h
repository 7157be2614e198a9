// Maps the vclock vDSO image into the test process as an installer would
// (a read-write config page, then the image's PT_LOAD, read + execute), and
// finds its functions as Go's runtime and musl do: through DT_HASH or
// DT_GNU_HASH, checking each symbol's version (DT_VERSYM, DT_VERDEF) is
// LINUX_2.6. Header-only; test code (throws nothing, returns empty on
// failure and says why in `error`).
#ifndef VCLOCK_TESTS_SUPPORT_VDSO_IMAGE_H_
#define VCLOCK_TESTS_SUPPORT_VDSO_IMAGE_H_

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vdso/image_config.h"

namespace vclock::test {

struct vdso_functions {
  int (*clock_gettime)(clockid_t, timespec*) = nullptr;
  int (*gettimeofday)(timeval*, void*) = nullptr;
  long (*time)(long*) = nullptr;
  int (*clock_getres)(clockid_t, timespec*) = nullptr;
};

// A symbol's address in a loaded ELF image at `ehdr`, as Go's
// runtime/vdso_elf64.go and musl's src/internal/vdso.c find it: the load
// base from PT_LOAD, the dynamic table from PT_DYNAMIC, then a hash table
// and the version. `gnu`: use DT_GNU_HASH (musl prefers DT_HASH, Go takes
// either); 0 when not found.
inline std::uintptr_t find_vdso_symbol(const void* ehdr_ptr, std::string_view name,
                                       std::string_view version, bool gnu) {
  const auto* eh = static_cast<const Elf64_Ehdr*>(ehdr_ptr);
  const auto at = reinterpret_cast<std::uintptr_t>(eh);
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(at + eh->e_phoff);
  std::uintptr_t base = 0;
  const Elf64_Dyn* dyn = nullptr;
  bool have_load = false;
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      base = at + ph[i].p_offset - ph[i].p_vaddr;
      have_load = true;
    } else if (ph[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const Elf64_Dyn*>(at + ph[i].p_offset);
    }
  }
  if (!have_load || dyn == nullptr) return 0;
  const Elf64_Sym* syms = nullptr;
  const char* strings = nullptr;
  const Elf32_Word* hash = nullptr;
  const Elf32_Word* gnu_hash = nullptr;
  const Elf64_Half* versym = nullptr;
  const Elf64_Verdef* verdef = nullptr;
  for (const Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; ++d) {
    const std::uintptr_t p = base + d->d_un.d_ptr;
    switch (d->d_tag) {
      case DT_SYMTAB:
        syms = reinterpret_cast<const Elf64_Sym*>(p);
        break;
      case DT_STRTAB:
        strings = reinterpret_cast<const char*>(p);
        break;
      case DT_HASH:
        hash = reinterpret_cast<const Elf32_Word*>(p);
        break;
      case DT_GNU_HASH:
        gnu_hash = reinterpret_cast<const Elf32_Word*>(p);
        break;
      case DT_VERSYM:
        versym = reinterpret_cast<const Elf64_Half*>(p);
        break;
      case DT_VERDEF:
        verdef = reinterpret_cast<const Elf64_Verdef*>(p);
        break;
      default:
        break;
    }
  }
  if (syms == nullptr || strings == nullptr || versym == nullptr || verdef == nullptr) return 0;
  const auto version_ok = [&](std::uint32_t i) {
    const Elf64_Half want = versym[i] & 0x7fff;
    for (const Elf64_Verdef* v = verdef;;
         v = reinterpret_cast<const Elf64_Verdef*>(reinterpret_cast<const char*>(v) + v->vd_next)) {
      if ((v->vd_flags & VER_FLG_BASE) == 0 && v->vd_ndx == want) {
        const auto* aux =
            reinterpret_cast<const Elf64_Verdaux*>(reinterpret_cast<const char*>(v) + v->vd_aux);
        return version == strings + aux->vda_name;
      }
      if (v->vd_next == 0) return false;
    }
  };
  const auto match = [&](std::uint32_t i) -> std::uintptr_t {
    const Elf64_Sym& s = syms[i];
    if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF) return 0;
    if (name != strings + s.st_name || !version_ok(i)) return 0;
    return base + s.st_value;
  };
  if (!gnu) {
    if (hash == nullptr) return 0;
    const std::uint32_t nchain = hash[1];
    for (std::uint32_t i = 0; i < nchain; ++i) {
      if (const std::uintptr_t a = match(i)) return a;
    }
    return 0;
  }
  if (gnu_hash == nullptr) return 0;
  std::uint32_t h = 5381;
  for (const char c : name) h = h * 33 + static_cast<unsigned char>(c);
  const std::uint32_t nbuckets = gnu_hash[0];
  const std::uint32_t symoffset = gnu_hash[1];
  const std::uint32_t bloom_size = gnu_hash[2];
  const auto* buckets = gnu_hash + 4 + std::size_t{bloom_size} * 2;  // 64-bit bloom words
  const auto* chain = buckets + nbuckets;
  std::uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return 0;
  for (;; ++i) {
    const std::uint32_t ch = chain[i - symoffset];
    if ((ch | 1u) == (h | 1u)) {
      if (const std::uintptr_t a = match(i)) return a;
    }
    if (ch & 1u) return 0;
  }
}

// The image mapped: `config` is its config page (zero, no magic: every
// call goes to the kernel, until the test fills it and sets the magic).
class mapped_vdso_image {
 public:
  explicit mapped_vdso_image(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error_ = "cannot open " + path;
      return;
    }
    struct stat st {};
    ::fstat(fd, &st);
    std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
    const ssize_t n = ::read(fd, bytes.data(), bytes.size());
    ::close(fd);
    if (n != st.st_size || bytes.size() < sizeof(Elf64_Ehdr)) {
      error_ = "cannot read " + path;
      return;
    }
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(bytes.data() + eh->e_phoff);
    std::size_t load_size = 0;
    for (int i = 0; i < eh->e_phnum; ++i) {
      if (ph[i].p_type == PT_LOAD) load_size = ph[i].p_offset + ph[i].p_filesz;
    }
    const std::size_t page = vdso::config_page_size;
    image_size_ = (load_size + page - 1) / page * page;
    size_ = page + image_size_;
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      error_ = "mmap failed";
      return;
    }
    mapping_ = static_cast<unsigned char*>(m);
    std::memcpy(mapping_ + page, bytes.data(), load_size);
    ::mprotect(mapping_ + page, image_size_, PROT_READ | PROT_EXEC);
  }
  mapped_vdso_image(const mapped_vdso_image&) = delete;
  mapped_vdso_image& operator=(const mapped_vdso_image&) = delete;
  ~mapped_vdso_image() {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
  }

  const std::string& error() const { return error_; }
  bool ok() const { return mapping_ != nullptr; }
  vdso::config_page& config() { return *reinterpret_cast<vdso::config_page*>(mapping_); }
  const void* ehdr() const { return mapping_ + vdso::config_page_size; }

  // The four functions, through DT_HASH (gnu false) or DT_GNU_HASH.
  vdso_functions functions(bool gnu) const {
    vdso_functions f;
    const auto find = [&](const char* n) { return find_vdso_symbol(ehdr(), n, "LINUX_2.6", gnu); };
    f.clock_gettime = reinterpret_cast<decltype(f.clock_gettime)>(find("__vdso_clock_gettime"));
    f.gettimeofday = reinterpret_cast<decltype(f.gettimeofday)>(find("__vdso_gettimeofday"));
    f.time = reinterpret_cast<decltype(f.time)>(find("__vdso_time"));
    f.clock_getres = reinterpret_cast<decltype(f.clock_getres)>(find("__vdso_clock_getres"));
    return f;
  }

  // Publishes the config the test filled (magic last).
  void publish() {
    config().config.version = vdso::config_version;
    __atomic_store_n(&config().config.magic, vdso::config_magic, __ATOMIC_RELEASE);
  }

 private:
  unsigned char* mapping_ = nullptr;
  std::size_t size_ = 0;
  std::size_t image_size_ = 0;
  std::string error_;
};

}  // namespace vclock::test

#endif  // VCLOCK_TESTS_SUPPORT_VDSO_IMAGE_H_
