#include "compile/pch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/hash.h"
#include "util/subprocess.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// `name` as exec would find it: absolute, through PATH when it has no slash; "" when not found.
std::string resolve_program(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos) {
    fs::path p = fs::canonical(name, ec);
    return ec ? "" : p.string();
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) {
      fs::path c = fs::canonical(p, ec);
      if (!ec) return c.string();
    }
  }
  return "";
}

std::string first_lines(const std::string& text, size_t n) {
  std::string out;
  std::stringstream s(text);
  std::string line;
  for (size_t i = 0; i < n && std::getline(s, line); ++i) out += (out.empty() ? "" : " | ") + line;
  return out;
}

// A single-quoted shell word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Python, run trusted (-I, no candidate code): torch's and Python's include folders for `device`.
const char* kProbe = R"PY(
import json, sys, sysconfig
import torch.utils.cpp_extension as c
dirs = list(c.include_paths("cuda" if sys.argv[1] == "cuda" else "cpu"))
p = sysconfig.get_path("include", scheme="posix_prefix")
if p:
    dirs.append(p)
print("KBV_TOOLCHAIN " + json.dumps({"include_dirs": dirs}))
)PY";

bool is_key(const std::string& name) {
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string wrapper_script(const FastBuild& fb) {
  // Compiles: the flags without -c, -o/-MF FILE, -MMD, the source and the extension's name give the
  // key; a precompiled torch/extension.h for that key goes first on the include path (GCC takes a
  // .gch found beside a header only when it is valid for the compile, else reads the header).
  // Without one, the flags are left for kbv to precompile after the build. Links (-shared) use lld.
  return fmt::format(R"SH(#!/bin/bash
# kbv-cxx: the C++ compiler of kbv's candidate builds (CXX), written by kbv for one toolchain
# (DESIGN.md, "The compile step"). Read-only to the build worker; only kbv writes {root}.
real={real}
pch={root}
link_opt={link}
compile=0; shared=0; skip=0; norm=()
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -c) compile=1 ;;
    -shared) shared=1; norm+=("$a") ;;
    -o|-MF) skip=1 ;;
    -MMD|-DTORCH_EXTENSION_NAME=*) ;;
    -*) norm+=("$a") ;;
    *.cpp|*.cc|*.cxx|*.C|*.c++) ;;
    *) norm+=("$a") ;;
  esac
done
if [ $compile = 1 ]; then
  key=$(printf '%s\0' "${{norm[@]}}" | sha256sum); key=${{key%% *}}
  if [ -f "$pch/$key/torch/extension.h.gch" ]; then
    exec "$real" -I"$pch/$key" "$@"
  fi
  if [ -n "$TORCH_EXTENSIONS_DIR" ] && [ -d "$TORCH_EXTENSIONS_DIR" ] && [ -w "$TORCH_EXTENSIONS_DIR" ]; then
    printf '%s\0' "${{norm[@]}}" > "$TORCH_EXTENSIONS_DIR/.kbv-pch-want-$key" 2>/dev/null
  fi
  exec "$real" "$@"
fi
if [ $shared = 1 ] && [ -n "$link_opt" ]; then
  exec "$real" "$link_opt" "$@"
fi
exec "$real" "$@"
)SH",
                     fmt::arg("real", sh_quote(fb.compiler)), fmt::arg("root", sh_quote(fb.root.string())),
                     fmt::arg("link", sh_quote(fb.lld ? "-fuse-ld=lld" : "")));
}

FastBuild prepare_fast_build(const fs::path& cache_dir, const std::string& python, const std::string& cxx,
                             const std::string& torch_version, const std::string& device, std::string& error) {
  FastBuild fb;
  const std::string wanted = cxx.empty() ? "c++" : cxx;
  if (wanted.find_first_of(" \t") != std::string::npos) {
    error = "CXX='" + wanted + "' is a command with arguments; the fast build needs a compiler path";
    return fb;
  }
  fb.compiler = resolve_program(wanted);
  if (fb.compiler.empty()) {
    error = "the C++ compiler '" + wanted + "' is not on PATH";
    return fb;
  }
  RunResult v = run_command({fb.compiler, "-dumpfullversion", "-dumpmachine"}, {}, std::chrono::seconds(30));
  if (!v.started || v.timed_out || v.status.code != 0) {
    error = fmt::format("{} -dumpfullversion failed: {}", fb.compiler, v.error.empty() ? first_lines(v.output, 3) : v.error);
    return fb;
  }
  fb.compiler_version = v.output;
  fb.lld = !resolve_program("ld.lld").empty();
  fb.id = sha256_hex_parts({"kbv-pch-2", fb.compiler, fb.compiler_version, python, torch_version, device,
                            fb.lld ? "lld" : "default-linker"});
  fb.root = cache_dir / "pch" / fb.id;
  fb.wrapper = fb.root / "kbv-cxx";
  std::error_code ec;
  fs::create_directories(fb.root, ec);
  if (ec) {
    error = fmt::format("cannot create {}: {}", fb.root.string(), ec.message());
    return fb;
  }
  FileLock lock(fb.root / ".lock");
  fs::path tc = fb.root / "toolchain.json";
  FileText t = read_file(tc);
  json j = t.ok ? json::parse(t.text, nullptr, false) : json();
  if (j.is_object() && j.contains("include_dirs") && j["include_dirs"].is_array()) {
    for (const auto& d : j["include_dirs"])
      if (d.is_string()) fb.include_dirs.push_back(d);
  } else {
    RunResult p = run_command({python, "-I", "-c", kProbe, device}, {}, std::chrono::seconds(300));
    std::smatch m;
    std::regex line("KBV_TOOLCHAIN (\\{.*\\})");
    if (!p.started || p.timed_out || p.status.code != 0 || !std::regex_search(p.output, m, line)) {
      error = fmt::format("cannot read torch's include folders from {}: {}", python,
                          p.error.empty() ? first_lines(p.output, 5) : p.error);
      return fb;
    }
    json probe = json::parse(m[1].str(), nullptr, false);
    if (!probe.is_object() || !probe.contains("include_dirs") || !probe["include_dirs"].is_array()) {
      error = "cannot read torch's include folders from " + python + ": " + m[1].str();
      return fb;
    }
    for (const auto& d : probe["include_dirs"])
      if (d.is_string()) fb.include_dirs.push_back(d);
    json out = {{"compiler", fb.compiler}, {"compiler_version", fb.compiler_version}, {"python", python},
                {"torch_version", torch_version}, {"device", device}, {"lld", fb.lld},
                {"include_dirs", fb.include_dirs}};
    if (std::string e = write_file_atomic(tc, out.dump(2)); !e.empty()) {
      error = e;
      return fb;
    }
  }
  std::string script = wrapper_script(fb);
  FileText old = read_file(fb.wrapper);
  if (!old.ok || old.text != script) {
    if (std::string e = write_file_atomic(fb.wrapper, script); !e.empty()) {
      error = e;
      return fb;
    }
  }
  fs::permissions(fb.wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec, ec);
  if (ec) error = fmt::format("cannot make {} executable: {}", fb.wrapper.string(), ec.message());
  return fb;
}

std::string pch_flags_key(const std::vector<std::string>& flags) {
  std::string joined;
  for (const auto& f : flags) {
    joined += f;
    joined.push_back('\0');
  }
  return sha256_hex(joined);
}

std::string check_pch_flags(const std::vector<std::string>& flags, const std::vector<std::string>& include_dirs) {
  static const std::regex allowed(
      "-O([0-3sgz]|fast)?|-std=[a-z0-9+]+|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+\"-]*)?|-U[A-Za-z_][A-Za-z0-9_]*|"
      "-g[0-3]?|-w|-pthread|-fPIC|-fpic|-shared|-f(no-)?[a-z0-9][a-z0-9-]*(=[a-z0-9_.+-]+)?|"
      "-m[a-z0-9][a-z0-9=_.+-]*|-W[a-z0-9][a-z0-9=_-]*");
  // -f options that read or write files, load code, or instrument across files. C++ modules
  // (-fmodules-ts, -fmodule-header, -fmodule-mapper=FILE) write a gcm.cache folder beside the
  // compile or read a mapper file (examples/level1/19_ReLU/cpu_pch_modules.py).
  static const std::regex refused_f(
      "-f(no-)?(plugin|profile|auto-profile|dump|opt-info|callgraph|stack-usage|save-optimization|lto|module|"
      "debug-prefix|file-prefix|macro-prefix|coverage|test-coverage|branch-probabilities|record-gcc|"
      "diagnostics-format|create-profile|sanitize-coverage|instrument|asan|tsan|ubsan|gen-).*");
  auto trusted_dir = [&](const std::string& d) {
    return std::find(include_dirs.begin(), include_dirs.end(), d) != include_dirs.end();
  };
  if (flags.empty()) return "no flags";
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (f == "-isystem" || f == "-I") {
      if (i + 1 >= flags.size()) return f + " without a folder";
      if (!trusted_dir(flags[i + 1])) return f + " " + flags[i + 1] + ": not one of torch's or Python's include folders";
      ++i;
      continue;
    }
    if (f.rfind("-isystem", 0) == 0 || f.rfind("-I", 0) == 0) {
      std::string d = f.substr(f[1] == 'I' ? 2 : 8);
      if (!trusted_dir(d)) return f + ": not one of torch's or Python's include folders";
      continue;
    }
    if (!std::regex_match(f, allowed) || std::regex_match(f, refused_f)) return "the flag '" + f + "' is not allowed";
  }
  return "";
}

std::string build_pch(const FastBuild& fb, const std::vector<std::string>& flags, size_t max_headers) {
  const std::string key = pch_flags_key(flags);
  const fs::path dest = fb.root / key;
  std::error_code ec;
  if (fs::exists(dest / "torch" / "extension.h.gch", ec)) return "";
  if (std::string e = check_pch_flags(flags, fb.include_dirs); !e.empty()) return e;
  fs::path header;
  for (const auto& d : fb.include_dirs)
    if (header.empty() && fs::exists(fs::path(d) / "torch" / "extension.h", ec)) header = fs::path(d) / "torch" / "extension.h";
  if (header.empty()) return "torch/extension.h is in none of the include folders";
  FileLock lock(fb.root / (key + ".lock"));
  if (fs::exists(dest / "torch" / "extension.h.gch", ec)) return "";  // built meanwhile
  size_t count = 0;
  for (const auto& e : fs::directory_iterator(fb.root, ec))
    if (is_key(e.path().filename().string())) ++count;
  if (count >= max_headers) return fmt::format("{} already holds {} precompiled headers", fb.root.string(), count);
  const fs::path tmp = fb.root / fmt::format("{}.tmp-{}", key, ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp / "torch", ec);
  // In its own temporary folder (`env -C`): whatever GCC writes beside the compile (a flag allowed
  // today that a later GCC makes write a file) lands there and goes with it, never in kbv's folder.
  std::vector<std::string> argv = {"env", "-C", tmp.string(), fb.compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-x", "c++-header", header.string(), "-o", (tmp / "torch" / "extension.h.gch").string()});
  // Made after a build, beside other evaluations: stopped while one of them times on the CPU.
  RunResult r = run_command(argv, {}, std::chrono::seconds(900), 1 << 20, /*pausable=*/true);
  if (!r.started || r.timed_out || r.status.code != 0) {
    fs::remove_all(tmp, ec);
    return fmt::format("precompiling {} failed: {}", header.string(),
                       r.error.empty() ? (r.timed_out ? "timed out" : first_lines(r.output, 5)) : r.error);
  }
  // GCC reads the header beside a .gch it takes (for -MMD's dependency list): a copy of torch's.
  fs::copy_file(header, tmp / "torch" / "extension.h", ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return fmt::format("cannot copy {}: {}", header.string(), ec.message());
  }
  write_file_atomic(tmp / "flags.json", json(flags).dump(1));
  fs::rename(tmp, dest, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return "";  // another kbv put it in place first
  }
  return "";
}

namespace {

// Counts one more build that asked for `flags`' header (<root>/<key>.asked, under its own lock: the
// header's lock is build_pch's) and says whether `after_asks` builds have now asked for it.
bool asked_enough(const FastBuild& fb, const std::vector<std::string>& flags, int after_asks) {
  if (after_asks <= 1) return true;
  const std::string key = pch_flags_key(flags);
  FileLock lock(fb.root / (key + ".asked.lock"));
  const fs::path counter = fb.root / (key + ".asked");
  FileText t = read_file(counter);
  int asks = 0;
  if (t.ok) std::from_chars(t.text.data(), t.text.data() + t.text.size(), asks);
  asks = std::max(asks, 0) + 1;
  write_file_atomic(counter, std::to_string(asks));
  return asks >= after_asks;
}

}  // namespace

int learn_pch(const FastBuild& fb, const fs::path& extensions_dir, std::string& error, int after_asks) {
  int built = 0, seen = 0;
  std::error_code ec;
  std::vector<fs::path> wants;
  for (const auto& e : fs::directory_iterator(extensions_dir, ec))
    if (e.path().filename().string().rfind(".kbv-pch-want-", 0) == 0) wants.push_back(e.path());
  for (const auto& w : wants) {
    // Written by the candidate's build: a symbolic link or a huge file is not followed or read.
    fs::file_status st = fs::symlink_status(w, ec);
    const bool regular = !ec && fs::is_regular_file(st) && fs::file_size(w, ec) < 65536 && !ec;
    if (regular && seen++ < 4) {
      FileText t = read_file(w);
      if (t.ok) {
        std::vector<std::string> flags;
        std::string cur;
        for (char c : t.text) {
          if (c == '\0') {
            flags.push_back(cur);
            cur.clear();
          } else {
            cur.push_back(c);
          }
        }
        // A refused set is not counted; an allowed one is made once enough builds asked for it.
        std::string e = check_pch_flags(flags, fb.include_dirs);
        if (e.empty() && asked_enough(fb, flags, after_asks)) {
          e = build_pch(fb, flags);
          if (e.empty()) ++built;
        }
        if (!e.empty() && error.empty()) error = e;
      }
    }
    fs::remove(w, ec);
  }
  return built;
}

bool names_precompiled_header(const std::string& text, const fs::path& root) {
  const std::string prefix = root.string() + "/";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    const size_t key_at = at + prefix.size();
    if (text.size() >= key_at + 64 + 7 && is_key(text.substr(key_at, 64)) && text.compare(key_at + 64, 7, "/torch/") == 0)
      return true;
  }
  return false;
}

}  // namespace kbv
