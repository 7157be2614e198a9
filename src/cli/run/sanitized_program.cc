// Reading a program's dynamic string table from its file: PT_DYNAMIC gives
// DT_STRTAB and DT_STRSZ as addresses, which PT_LOAD maps back to offsets.
#include "cli/run/sanitized_program.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

namespace vclock::cli {
namespace {

template <typename T>
bool read_at(std::ifstream& in, std::uint64_t offset, T& value) {
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&value), sizeof(value)));
}

}  // namespace

bool has_leak_sanitizer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!read_at(in, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr dynamic{};
  for (std::uint64_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (!read_at(in, eh.e_phoff + i * sizeof(ph), ph)) return false;
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
  }
  if (dynamic.p_type != PT_DYNAMIC) return false;
  std::uint64_t strtab = 0;
  std::uint64_t strsz = 0;
  for (std::uint64_t off = dynamic.p_offset;
       off + sizeof(Elf64_Dyn) <= dynamic.p_offset + dynamic.p_filesz; off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d{};
    if (!read_at(in, off, d) || d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
  }
  constexpr std::uint64_t most = 16 << 20;  // a string table larger than this is not real
  if (strtab == 0 || strsz == 0 || strsz > most) return false;
  for (const Elf64_Phdr& l : loads) {
    if (strtab < l.p_vaddr || strtab + strsz > l.p_vaddr + l.p_filesz) continue;
    std::string strings(strsz, '\0');
    in.seekg(static_cast<std::streamoff>(strtab - l.p_vaddr + l.p_offset));
    if (!in.read(strings.data(), static_cast<std::streamsize>(strsz))) return false;
    const std::string_view s(strings);
    return s.find("__lsan_") != std::string_view::npos ||
           s.find("__asan_init") != std::string_view::npos;
  }
  return false;
}

}  // namespace vclock::cli
