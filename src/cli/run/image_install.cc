// Installing the vclock vDSO image into a process at its exec.
//
// Order inside the process (each step a system call made there, through
// tracee_calls): reserve config page + image read-write and anonymous;
// write the paths to open into the image's half (about to be replaced);
// open the image and the pages; map the pages read-only and shared (as the
// shim does, so that they stay live); map the image's file over its half,
// read + execute and private (so /proc/PID/maps names it: `vclock status
// --pid`); close the descriptors. Then, from here: the config, and
// AT_SYSINFO_EHDR on the stack. Nothing of the program has run yet.
#include "cli/run/image_install.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "cli/run/tracee_registers.h"
#include "vclock/ns_page.h"
#include "vclock/page.h"
#include "vdso/image_config.h"

namespace vclock::cli {
namespace {

constexpr std::uint64_t page_bytes = vdso::config_page_size;

std::uint64_t round_up(std::uint64_t n) { return (n + page_bytes - 1) / page_bytes * page_bytes; }

bool is_error(std::int64_t r) { return r < 0 && r >= -4095; }

// The kernel's vDSO is one image for every process of this kernel and ABI:
// its functions' offsets from its ELF header, found in this process, hold
// in the tracee (at its own AT_SYSINFO_EHDR). 0 where it has no such symbol.
std::uint64_t own_vdso_offset(const char* name) {
  const auto at = static_cast<std::uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  if (at == 0) return 0;
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(at);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return 0;
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(at + eh->e_phoff);
  std::uintptr_t base = 0;
  const ElfW(Dyn)* dyn = nullptr;
  bool have_load = false;
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      base = at + ph[i].p_offset - ph[i].p_vaddr;
      have_load = true;
    } else if (ph[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(at + ph[i].p_offset);
    }
  }
  if (!have_load || dyn == nullptr) return 0;
  const ElfW(Sym)* syms = nullptr;
  const char* strings = nullptr;
  const ElfW(Word)* hash = nullptr;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    const std::uintptr_t p = base + d->d_un.d_ptr;
    if (d->d_tag == DT_SYMTAB) syms = reinterpret_cast<const ElfW(Sym)*>(p);
    if (d->d_tag == DT_STRTAB) strings = reinterpret_cast<const char*>(p);
    if (d->d_tag == DT_HASH) hash = reinterpret_cast<const ElfW(Word)*>(p);
  }
  if (syms == nullptr || strings == nullptr || hash == nullptr) return 0;
  for (ElfW(Word) i = 0; i < hash[1]; ++i) {  // nchain: the number of symbols
    const ElfW(Sym)& s = syms[i];
    if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx != SHN_UNDEF &&
        std::strcmp(strings + s.st_name, name) == 0) {
      return base + s.st_value - at;
    }
  }
  return 0;
}

bool write_remote(pid_t pid, std::uint64_t address, const void* data, std::size_t size) {
  iovec local{const_cast<void*>(data), size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_writev(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

// The stack at exec: argc, argv[], 0, envp[], 0, then auxv pairs to AT_NULL.
// Returns the address of AT_SYSINFO_EHDR's value, 0 if there is none.
std::uint64_t find_sysinfo_slot(pid_t pid, std::uint64_t sp, std::uint64_t expected) {
  std::vector<std::uint64_t> words(32768);  // 256 KiB: argv and envp pointers, then auxv
  iovec local{words.data(), words.size() * sizeof(std::uint64_t)};
  iovec remote{reinterpret_cast<void*>(sp), local.iov_len};
  const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got <= 0) return 0;
  const std::size_t n = static_cast<std::size_t>(got) / sizeof(std::uint64_t);
  std::size_t i = 1 + words[0] + 1;    // past argc, argv[], its null
  while (i < n && words[i] != 0) ++i;  // envp[]
  for (++i; i + 1 < n && words[i] != AT_NULL; i += 2) {
    if (words[i] == AT_SYSINFO_EHDR) {
      return words[i + 1] == expected ? sp + (i + 1) * sizeof(std::uint64_t) : 0;
    }
  }
  return 0;
}

class installer {
 public:
  installer(pid_t pid, const image_plan& plan) : pid_(pid), plan_(plan) {}

  bool run(const exec_facts& facts, std::string& error) {
    const std::uint64_t total = page_bytes + plan_.image_bytes;
    std::int64_t reserved = 0;
    if (!call(SYS_mmap,
              {0, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               static_cast<std::uint64_t>(-1), 0},
              reserved, "reserve the image's place", error)) {
      return false;
    }
    const auto config_at = static_cast<std::uint64_t>(reserved);
    const std::uint64_t image_at = config_at + page_bytes;
    // The three paths, written where the image will be mapped.
    std::string paths = plan_.image + '\0' + plan_.host_page + '\0' + plan_.ns_page + '\0';
    if (paths.size() > plan_.image_bytes ||
        !write_remote(pid_, image_at, paths.data(), paths.size())) {
      error = "cannot write the paths into the process";
      return false;
    }
    const std::uint64_t image_path = image_at;
    const std::uint64_t host_path = image_path + plan_.image.size() + 1;
    const std::uint64_t ns_path = host_path + plan_.host_page.size() + 1;
    std::int64_t image_fd = -1;
    if (!open_file(image_path, image_fd, plan_.image, error)) return false;
    vdso::config_page config{};
    // The host page is an accelerator: a process that may not open it (one
    // that dropped to another uid, like the shim in it) reads the kernel's
    // time through the namespace's line. The namespace page is the point.
    std::string host_error;
    if (!plan_.host_page.empty() &&
        !map_shared(host_path, page_bytes, plan_.host_page, config.config.host_page, host_error)) {
      config.config.host_page = 0;
    }
    if (!plan_.ns_page.empty() &&
        !map_shared(ns_path, ns_page_bytes, plan_.ns_page, config.config.ns_page, error)) {
      return false;
    }
    std::int64_t mapped = 0;
    if (!call(SYS_mmap,
              {image_at, plan_.image_bytes, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
               static_cast<std::uint64_t>(image_fd), 0},
              mapped, "map " + plan_.image, error)) {
      return false;
    }
    std::int64_t ignored = 0;
    call(SYS_close, {static_cast<std::uint64_t>(image_fd)}, ignored, "close", error);

    config.config.version = vdso::config_version;
    config.config.ordering = plan_.ordering;
    if (facts.kernel_vdso != 0) {
      const auto at = [&](const char* name) {
        const std::uint64_t offset = own_vdso_offset(name);
        return offset == 0 ? 0 : facts.kernel_vdso + offset;
      };
      config.config.kernel_clock_gettime = at("__vdso_clock_gettime");
      config.config.kernel_gettimeofday = at("__vdso_gettimeofday");
      config.config.kernel_time = at("__vdso_time");
      config.config.kernel_clock_getres = at("__vdso_clock_getres");
      config.config.kernel_vdso_base = facts.kernel_vdso;
    }
    config.config.magic = vdso::config_magic;  // the program has not started: no order to keep
    if (!write_remote(pid_, config_at, &config, sizeof(config))) {
      error = "cannot write the image's config";
      return false;
    }
    const std::uint64_t slot = find_sysinfo_slot(pid_, calls_.stack_pointer(), facts.kernel_vdso);
    if (slot == 0) {
      error = "no AT_SYSINFO_EHDR on the process's stack";
      return false;
    }
    if (!write_remote(pid_, slot, &image_at, sizeof(image_at))) {
      error = "cannot rewrite AT_SYSINFO_EHDR";
      return false;
    }
    return true;
  }

  tracee_calls& calls() { return calls_; }

 private:
  bool call(long nr, std::initializer_list<std::uint64_t> args, std::int64_t& result,
            const std::string& what, std::string& error) {
    if (!calls_.call(nr, args, result, error)) return false;
    if (is_error(result)) {
      error = "cannot " + what + " in the process: " + std::strerror(static_cast<int>(-result));
      return false;
    }
    return true;
  }

  bool open_file(std::uint64_t path_at, std::int64_t& fd, const std::string& path,
                 std::string& error) {
    return call(SYS_openat,
                {static_cast<std::uint64_t>(AT_FDCWD), path_at, O_RDONLY | O_CLOEXEC | O_NOFOLLOW},
                fd, "open " + path, error);
  }

  bool map_shared(std::uint64_t path_at, std::uint64_t bytes, const std::string& path,
                  std::uint64_t& address, std::string& error) {
    std::int64_t fd = -1;
    if (!open_file(path_at, fd, path, error)) return false;
    std::int64_t mapped = 0;
    const bool ok =
        call(SYS_mmap, {0, bytes, PROT_READ, MAP_SHARED, static_cast<std::uint64_t>(fd), 0}, mapped,
             "map " + path, error);
    std::int64_t ignored = 0;
    std::string close_error;
    calls_.call(SYS_close, {static_cast<std::uint64_t>(fd)}, ignored, close_error);
    address = ok ? static_cast<std::uint64_t>(mapped) : 0;
    return ok;
  }

  pid_t pid_;
  const image_plan& plan_;
  tracee_calls calls_;
};

}  // namespace

bool read_exec_facts(pid_t pid, exec_facts& facts, std::string& error) {
  const auto header_of = [](const std::string& path, Elf64_Ehdr& eh) {
    std::ifstream file(path, std::ios::binary);
    return static_cast<bool>(file.read(reinterpret_cast<char*>(&eh), sizeof(eh))) &&
           std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0;
  };
  Elf64_Ehdr own{};
  Elf64_Ehdr theirs{};
  // A file this process may not read (execute-only) counts as native; the
  // register layer checks the mode again before it makes any call.
  facts.native =
      !header_of("/proc/self/exe", own) ||
      !header_of("/proc/" + std::to_string(pid) + "/exe", theirs) ||
      (theirs.e_ident[EI_CLASS] == own.e_ident[EI_CLASS] && theirs.e_machine == own.e_machine);
  if (!facts.native) return true;  // its auxv is not in this layout: nothing more to read
  std::ifstream in("/proc/" + std::to_string(pid) + "/auxv", std::ios::binary);
  std::uint64_t pair[2] = {};
  bool any = false;
  while (in.read(reinterpret_cast<char*>(pair), sizeof(pair)) && pair[0] != AT_NULL) {
    any = true;
    if (pair[0] == AT_SECURE) facts.secure = pair[1] != 0;
    if (pair[0] == AT_BASE) facts.dynamic = pair[1] != 0;
    if (pair[0] == AT_SYSINFO_EHDR) facts.kernel_vdso = pair[1];
  }
  if (!any) error = "cannot read /proc/" + std::to_string(pid) + "/auxv";
  return any;
}

bool prepare_image_plan(image_plan& plan, std::string& error) {
  std::ifstream in(plan.image, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof(eh)) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_type != ET_DYN) {
    error = plan.image + " is not the vclock vDSO image";
    return false;
  }
  std::uint64_t load_end = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + static_cast<std::uint64_t>(i) * sizeof(ph)));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof(ph))) break;
    // One PT_LOAD at offset == address 0, nothing but file bytes (docs/vdso.md).
    if (ph.p_type == PT_LOAD && ph.p_offset == 0 && ph.p_vaddr == 0 && ph.p_memsz == ph.p_filesz) {
      load_end = ph.p_filesz;
    }
  }
  if (load_end == 0) {
    error = plan.image + " has no PT_LOAD the handover can map";
    return false;
  }
  plan.image_bytes = round_up(load_end);
  return true;
}

bool install_image(pid_t pid, const image_plan& plan, const exec_facts& facts, std::string& error) {
  installer in(pid, plan);
  if (!in.calls().begin(pid, error)) return false;
  const bool ok = in.run(facts, error);
  std::string finish_error;
  const bool restored = in.calls().finish(finish_error);
  if (!restored && ok) error = finish_error;
  return ok && restored;
}

}  // namespace vclock::cli
