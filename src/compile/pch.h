// Faster candidate builds with the same machine code: a precompiled torch/extension.h per
// toolchain and flag set, and lld for the link. Only kbv (trusted, outside the sandbox) writes
// the precompiled headers; the build worker reads them (DESIGN.md, "The compile step").
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace kbv {

// One toolchain's fast build: the compiler wrapper the build worker gets as CXX and the folder of
// its precompiled headers, <cache>/pch/<id>/ (the wrapper is <id>/kbv-cxx, each header
// <id>/<flags key>/torch/extension.h.gch).
struct FastBuild {
  std::string id;                          // sha256 of the compiler, python, torch, device
  std::filesystem::path root;              // <cache>/pch/<id>
  std::filesystem::path wrapper;           // root/kbv-cxx
  std::string compiler;                    // the real compiler, absolute
  std::string compiler_version;            // `-dumpfullversion -dumpmachine`
  std::vector<std::string> include_dirs;   // torch's and Python's include folders (trusted)
  bool lld = false;                        // links with -fuse-ld=lld
};

// Finds the compiler (`cxx`: CXX as the build worker would see it, or "c++"), asks `python` for
// torch's include folders (once per toolchain: kept in root/toolchain.json), and writes the
// wrapper. Trusted: runs only kbv's own code and the interpreter with `-I`. Error: a message.
FastBuild prepare_fast_build(const std::filesystem::path& cache_dir, const std::string& python,
                             const std::string& cxx, const std::string& torch_version, const std::string& device,
                             std::string& error);

// The wrapper script for `fb` (its text; prepare_fast_build writes it).
std::string wrapper_script(const FastBuild& fb);

// The key of a compile's flags (without -c, -o, -MMD/-MF, the source and the extension's name):
// sha256 of the arguments, each followed by a NUL byte (as the wrapper computes it).
std::string pch_flags_key(const std::vector<std::string>& flags);

// "" when a precompiled header may be built with these flags: every flag from a short allow-list
// (-O, -std, -f/-m/-W options without paths, -D/-U, -g, -w, -pthread, -fPIC) and -isystem/-I only
// for `include_dirs`; else why not. Flags naming files or plugins (-include, -fplugin, @file,
// -Wp, -B, --sysroot, -specs, ...) are refused: kbv runs the compiler with them outside the sandbox.
std::string check_pch_flags(const std::vector<std::string>& flags, const std::vector<std::string>& include_dirs);

// Builds root/<key>/torch/extension.h.gch (and a copy of the header beside it, which GCC reads)
// for `flags` (checked first) unless it exists: in a temporary folder, renamed into place. The
// workers see it read-only (sandbox). At most `max_headers` per toolchain (~750 MB each, torch 2.11).
std::string build_pch(const FastBuild& fb, const std::vector<std::string>& flags, size_t max_headers = 8);

// Builds that compile a flag set before its header is made. Making one (36 CPU s for -O3 on the
// 2-core machine) costs one and a half plain compiles of a candidate (23 s), and it saves 12 s of
// each later one (docs/results/2026-12-07-ci.md): a flag set that only one or two builds use (a
// rare -O level, a test's own cache) would never earn it back.
inline constexpr int kPchAfterAsks = 3;

// After a build: the flag sets the wrapper left in `extensions_dir` (.kbv-pch-want-*, written by
// the candidate's build, so untrusted: regular files only, checked) are counted, and a set asked
// for by `after_asks` builds gets its precompiled header for the next candidates; the want files
// are removed. Returns how many headers were built.
int learn_pch(const FastBuild& fb, const std::filesystem::path& extensions_dir, std::string& error,
              int after_asks = kPchAfterAsks);

// Whether a build's failure text names one of the precompiled headers under `root` (a .gch GCC
// refused, or the header copy beside it): <root>/<key>/torch/... Every compile command names the
// wrapper (<root>/kbv-cxx) and, with a header, the folder (-I<root>/<key>): neither alone is the
// fast build's fault, and a compile error of the candidate's own was built twice for it.
bool names_precompiled_header(const std::string& text, const std::filesystem::path& root);

}  // namespace kbv
