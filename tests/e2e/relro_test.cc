// Full RELRO of the built kbv_worker module and kbv (T22): the dynamic linker resolves every PLT
// slot at load (BIND_NOW / FLAGS_1 NOW) and the GNU_RELRO segment, read-only once loading is done,
// covers the GOT, so a candidate's constructor cannot point the module's slot of
// std::chrono::steady_clock::now at its own clock by a plain write (examples/level1/
// 1_Square_matrix_multiplication_/cpu_plt_clock.py reopens the page with mprotect; the per-call
// bound catches it, docs/TIMING.md).
#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support.h"

namespace fs = std::filesystem;

namespace relro_test {

struct ElfFacts {
  std::string error;                       // empty when parsed
  bool bind_now = false;                   // DT_FLAGS & DF_BIND_NOW, or DT_FLAGS_1 & DF_1_NOW
  uint64_t relro_begin = 0, relro_end = 0; // the GNU_RELRO segment's virtual addresses
  std::vector<uint64_t> plt_slots;         // r_offset of every JUMP_SLOT relocation
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> got_sections;  // .got, .got.plt
};

template <class T> bool read_at(const std::string& bytes, uint64_t off, T& out) {
  if (off > bytes.size() || bytes.size() - off < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + off, sizeof(T));
  return true;
}

// A 64-bit little-endian ELF file's program headers, dynamic section and relocations.
ElfFacts parse_elf(const fs::path& path) {
  ElfFacts f;
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh{};
  if (!read_at(bytes, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return {"not a 64-bit ELF file: " + path.string(), false, 0, 0, {}, {}};
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (!read_at(bytes, eh.e_phoff + uint64_t(i) * eh.e_phentsize, ph)) return {"truncated program headers", false, 0, 0, {}, {}};
    if (ph.p_type == PT_GNU_RELRO) {
      f.relro_begin = ph.p_vaddr;
      f.relro_end = ph.p_vaddr + ph.p_memsz;
    }
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (int i = 0; i < eh.e_shnum; ++i)
    if (!read_at(bytes, eh.e_shoff + uint64_t(i) * eh.e_shentsize, sh[size_t(i)])) return {"truncated section headers", false, 0, 0, {}, {}};
  const Elf64_Shdr* names = eh.e_shstrndx < sh.size() ? &sh[eh.e_shstrndx] : nullptr;
  for (const Elf64_Shdr& s : sh) {
    std::string name = names && s.sh_name < names->sh_size ? std::string(bytes.c_str() + names->sh_offset + s.sh_name) : "";
    if (name == ".got" || name == ".got.plt") f.got_sections.push_back({name, {s.sh_addr, s.sh_addr + s.sh_size}});
    if (s.sh_type == SHT_DYNAMIC)
      for (uint64_t off = s.sh_offset; off + sizeof(Elf64_Dyn) <= s.sh_offset + s.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d{};
        if (!read_at(bytes, off, d)) break;
        if (d.d_tag == DT_FLAGS && (d.d_un.d_val & DF_BIND_NOW)) f.bind_now = true;
        if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_NOW)) f.bind_now = true;
        if (d.d_tag == DT_BIND_NOW) f.bind_now = true;
      }
    if (s.sh_type == SHT_RELA && name == ".rela.plt")
      for (uint64_t off = s.sh_offset; off + sizeof(Elf64_Rela) <= s.sh_offset + s.sh_size; off += sizeof(Elf64_Rela)) {
        Elf64_Rela r{};
        if (!read_at(bytes, off, r)) break;
        if (ELF64_R_TYPE(r.r_info) == R_X86_64_JUMP_SLOT) f.plt_slots.push_back(r.r_offset);
      }
  }
  return f;
}

void expect_full_relro(const fs::path& path) {
  ASSERT_TRUE(fs::exists(path)) << path;
  ElfFacts f = parse_elf(path);
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_TRUE(f.bind_now) << path << " is not linked with -z now: its PLT slots are resolved lazily and stay writable";
  ASSERT_LT(f.relro_begin, f.relro_end) << path << " has no GNU_RELRO segment";
  EXPECT_FALSE(f.plt_slots.empty() && f.got_sections.empty()) << path << ": no GOT to check";
  for (uint64_t slot : f.plt_slots)
    EXPECT_TRUE(slot >= f.relro_begin && slot + 8 <= f.relro_end)
        << path << ": PLT slot at 0x" << std::hex << slot << " is outside GNU_RELRO [0x" << f.relro_begin << ", 0x"
        << f.relro_end << ")";
  for (const auto& [name, range] : f.got_sections)
    EXPECT_TRUE(range.first >= f.relro_begin && range.second <= f.relro_end)
        << path << ": " << name << " [0x" << std::hex << range.first << ", 0x" << range.second
        << ") is not covered by GNU_RELRO [0x" << f.relro_begin << ", 0x" << f.relro_end << ")";
}

fs::path worker_module() {
  for (const auto& e : fs::directory_iterator(KBV_WORKER_DIR)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("kbv_worker", 0) == 0 && e.path().extension() == ".so") return e.path();
  }
  return fs::path(KBV_WORKER_DIR) / "kbv_worker.so";
}

TEST(Relro, WorkerModuleGotIsReadOnlyAfterLoad) { expect_full_relro(worker_module()); }

TEST(Relro, KbvBinaryGotIsReadOnlyAfterLoad) { expect_full_relro(KBV_BINARY); }

}  // namespace relro_test
