// The compile step without Python: the build cache (its key, its cached outcomes, concurrent
// builders) with a stand-in build worker, and the fast build's wrapper and precompiled headers
// with stand-in compilers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compile/build.h"
#include "compile/pch.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace kbv {
namespace compile_test {
namespace fs = std::filesystem;

fs::path temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kbv_compile_test.XXXXXX").string();
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

void write(const fs::path& p, const std::string& text, bool exec = false) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  if (exec) fs::permissions(p, fs::perms::owner_all);
}

Toolchain toolchain() { return {"2.11.0", "3.11.2", "/usr/bin/python3", "cpu", "cpu", "", ""}; }

BuildJob job(const fs::path& cache, const std::string& code, const fs::path& solution) {
  BuildJob j;
  j.code = code;
  j.solution_path = solution;
  j.cache_dir = cache;
  j.toolchain = toolchain();
  j.fast = false;  // no Python here: the plain path
  return j;
}

// A build worker that fails the way a compile error does, naming the file it was given.
BuildWorkerOutcome failing_worker(const BuildLaunch& launch) {
  BuildWorkerOutcome out;
  WorkerFailure f;
  f.kind = "compile_error";
  f.message = launch.request.path + ": loading the solution failed";
  f.traceback = "Traceback (most recent call last):\n  File \"" + launch.request.path +
                "\", line 7, in <module>\nRuntimeError: Error building extension 'x'\n"
                "main.cpp:13:5: error: 'foo' was not declared in this scope\n";
  out.failure = f;
  return out;
}

TEST(BuildKey, EveryPartOfTheToolchainAndTheModeChangesIt) {
  const std::string base = build_key("code", toolchain(), "plain");
  EXPECT_EQ(base, build_key("code", toolchain(), "plain"));
  EXPECT_NE(base, build_key("code ", toolchain(), "plain"));  // sources and load_inline's flags live in the code
  EXPECT_NE(base, build_key("code", toolchain(), "fast-abc"));
  auto changed = [&](auto edit) {
    Toolchain t = toolchain();
    edit(t);
    return build_key("code", t, "plain");
  };
  EXPECT_NE(base, changed([](Toolchain& t) { t.torch_version = "2.12.0"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.python_version = "3.12.0"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.python = "/opt/py/bin/python3"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.device = "cuda"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.device_name = "NVIDIA H100"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.cxx = "clang++"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.cuda_arch_list = "9.0"; }));
  EXPECT_NE(base, changed([](Toolchain& t) { t.in_place = true; }));
}

TEST(BuildCache, AFailureIsCachedAsAnOutcomeThatNamesTheFileBeingEvaluated) {
  fs::path d = temp_dir();
  const std::string code = "import torch\n# fails\n";
  int calls = 0;
  auto worker = [&](const BuildLaunch& l) {
    ++calls;
    return failing_worker(l);
  };
  BuildResult a = build_cached(job(d / "cache", code, d / "runs/model_a/level_1_problem_1_sample_0_kernel.py"), worker);
  ASSERT_FALSE(a.ok);
  EXPECT_FALSE(a.cached);
  EXPECT_EQ(a.kind, "compile_error");
  EXPECT_NE(a.message.find("runs/model_a/level_1_problem_1_sample_0_kernel.py"), std::string::npos) << a.message;
  BuildResult b = build_cached(job(d / "cache", code, d / "runs/model_b/level_1_problem_1_sample_3_kernel.py"), worker);
  EXPECT_EQ(calls, 1) << "the second run folder reuses the outcome";
  ASSERT_FALSE(b.ok);
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.kind, "compile_error");
  EXPECT_EQ(b.diagnostics, a.diagnostics);
  EXPECT_NE(b.message.find("runs/model_b/level_1_problem_1_sample_3_kernel.py"), std::string::npos) << b.message;
  EXPECT_EQ(b.message.find("model_a"), std::string::npos) << "a cached failure names another run's file: " << b.message;
  fs::remove_all(d);
}

TEST(BuildCache, DifferentToolchainsNeverShareAnEntry) {
  fs::path d = temp_dir();
  int calls = 0;
  auto ok_worker = [&](const BuildLaunch&) {
    ++calls;
    return BuildWorkerOutcome{};
  };
  BuildJob j = job(d / "cache", "code", d / "s.py");
  BuildResult first = build_cached(j, ok_worker);
  ASSERT_TRUE(first.ok);
  EXPECT_TRUE(build_cached(j, ok_worker).cached);
  EXPECT_EQ(calls, 1);
  for (auto edit : std::vector<void (*)(BuildJob&)>{[](BuildJob& x) { x.toolchain.torch_version = "2.12.0"; },
                                                     [](BuildJob& x) { x.toolchain.cxx = "clang++"; },
                                                     [](BuildJob& x) { x.toolchain.device_name = "NVIDIA H200"; },
                                                     [](BuildJob& x) { x.code += "\n# -O2 instead of -O3\n"; }}) {
    BuildJob k = j;
    edit(k);
    BuildResult r = build_cached(k, ok_worker);
    EXPECT_FALSE(r.cached);
    EXPECT_NE(r.extensions_dir, first.extensions_dir);
  }
  EXPECT_EQ(calls, 5);
  fs::remove_all(d);
}

TEST(BuildCache, TwoConcurrentBuildsOfOneSourceBuildOnceIntoOneEntry) {
  fs::path d = temp_dir();
  std::atomic<int> calls{0};
  auto slow_worker = [&](const BuildLaunch& l) {
    ++calls;
    // What a build leaves in its folder; the other builder must wait for it, not build again.
    write(fs::path(l.env.at("TORCH_EXTENSIONS_DIR")) / "ext_x" / "ext_x.so", "built");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return BuildWorkerOutcome{};
  };
  BuildResult r1, r2;
  std::thread t1([&] { r1 = build_cached(job(d / "cache", "same", d / "a.py"), slow_worker); });
  std::thread t2([&] { r2 = build_cached(job(d / "cache", "same", d / "b.py"), slow_worker); });
  t1.join();
  t2.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(r1.ok);
  EXPECT_TRUE(r2.ok);
  EXPECT_NE(r1.cached, r2.cached) << "one built, the other reused it";
  EXPECT_EQ(r1.extensions_dir, r2.extensions_dir);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d / "cache" / "build")) ++entries;
  EXPECT_EQ(entries, 1u);
  fs::remove_all(d);
}

// The host's failure, not the candidate's: harness_error (never compile_error), and not cached.
TEST(BuildCache, AWorkerThatCannotStartIsTheHostsFailureAndNotCached) {
  fs::path d = temp_dir();
  int calls = 0;
  auto worker = [&](const BuildLaunch&) {
    ++calls;
    return BuildWorkerOutcome{"no python", std::nullopt};
  };
  BuildResult r = build_cached(job(d / "cache", "c", d / "s.py"), worker);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.kind, "harness_error");
  EXPECT_NE(r.message.find("cannot start the build worker: no python"), std::string::npos);
  build_cached(job(d / "cache", "c", d / "s.py"), worker);
  EXPECT_EQ(calls, 2);
  fs::remove_all(d);
}

// A build worker's reply that claims the host's failure is the candidate's (its module body can
// write the reply: examples/level1/19_ReLU/cpu_forge_host_failure.py): a compile_error, cached as
// one; an entry a forged reply left before is not an outcome and is built again.
TEST(BuildCache, AReplyClaimingTheHostsFailureIsACompileErrorAndAForgedEntryIsRebuilt) {
  fs::path d = temp_dir();
  int calls = 0;
  auto forging = [&](const BuildLaunch&) {
    ++calls;
    BuildWorkerOutcome out;
    WorkerFailure f;
    f.kind = "harness_error";
    f.message = "cannot start the build worker: fork: Resource temporarily unavailable";
    out.failure = f;
    return out;
  };
  BuildResult r = build_cached(job(d / "cache", "forged", d / "s.py"), forging);
  EXPECT_EQ(r.kind, "compile_error") << r.message;
  BuildResult again = build_cached(job(d / "cache", "forged", d / "s.py"), forging);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.kind, "compile_error");
  EXPECT_EQ(calls, 1);
  // An entry cached with such a kind (by a kbv that took the reply's word) is built again.
  const BuildEntry entry = build_entry(job(d / "cache", "forged", d / "s.py"));
  std::ofstream(entry.dir / "result.json")
      << R"({"ok": false, "kind": "harness_error", "message": "cannot start the build worker", "diagnostics": []})";
  BuildResult rebuilt = build_cached(job(d / "cache", "forged", d / "s.py"), forging);
  EXPECT_FALSE(rebuilt.cached);
  EXPECT_EQ(rebuilt.kind, "compile_error");
  EXPECT_EQ(calls, 2);
  fs::remove_all(d);
}

// ---- the fast build: flags, the wrapper, the precompiled headers ----------------------------

const std::vector<std::string> kTrusted = {"/venv/torch/include", "/venv/torch/include/torch/csrc/api/include",
                                           "/usr/include/python3.11"};

std::vector<std::string> torch_flags() {
  return {"-DTORCH_API_INCLUDE_EXTENSION_H", "-isystem", "/venv/torch/include", "-isystem",
          "/venv/torch/include/torch/csrc/api/include", "-isystem", "/usr/include/python3.11",
          "-D_GLIBCXX_USE_CXX11_ABI=1", "-DPYBIND11_COMPILER_TYPE=\"_gcc\"", "-fPIC", "-std=c++17", "-O3",
          "-march=native", "-fopenmp", "-Wall"};
}

TEST(PchFlags, TorchsOwnFlagsAndOptimisationFlagsAreAllowed) {
  EXPECT_EQ(check_pch_flags(torch_flags(), kTrusted), "");
}

TEST(PchFlags, FlagsThatNameFilesOrLoadCodeAreRefused) {
  for (std::vector<std::string> extra :
       {std::vector<std::string>{"-include", "/tmp/evil.h"}, {"-include/tmp/evil.h"}, {"-imacros", "/tmp/m.h"},
        {"-fplugin=/tmp/p.so"}, {"@/tmp/args"}, {"-Wp,-include,/tmp/evil.h"}, {"-B/tmp/bin"}, {"--sysroot=/tmp"},
        {"-specs=/tmp/s"}, {"-I/tmp/mine"}, {"-isystem", "/tmp/mine"}, {"-fprofile-use=/tmp/p"},
        {"-fdump-tree-all"}, {"-iquote", "/tmp"}, {"-DX=/tmp/y"}, {"-x", "c"},
        // C++ modules write gcm.cache/ beside the compile (kbv's working folder) or read a mapper
        // file (examples/level1/19_ReLU/cpu_pch_modules.py)
        {"-fmodules-ts"}, {"-fmodule-header"}, {"-fmodule-header=user"}, {"-fmodule-mapper=map"},
        {"-fno-modules-ts"}}) {
    std::vector<std::string> f = torch_flags();
    f.insert(f.end(), extra.begin(), extra.end());
    EXPECT_NE(check_pch_flags(f, kTrusted), "") << extra.front();
  }
  EXPECT_NE(check_pch_flags({}, kTrusted), "");
}

// A stand-in compiler: prints its arguments, one a line, to $ARGS_OUT; writes the file after -o.
const char* kFakeCompiler = R"(#!/bin/bash
printf '%s\n' "$@" > "$ARGS_OUT"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -n "$out" ] && echo fake > "$out"
exit 0
)";

FastBuild fake_fast(const fs::path& d) {
  FastBuild fb;
  fb.id = "test";
  fb.root = d / "pch" / "test";
  fb.wrapper = fb.root / "kbv-cxx";
  fb.compiler = (d / "fake-c++").string();
  fb.lld = true;
  fb.include_dirs = {(d / "inc").string()};
  write(d / "fake-c++", kFakeCompiler, true);
  write(d / "inc" / "torch" / "extension.h", "#pragma once\n");
  write(fb.wrapper, wrapper_script(fb), true);
  return fb;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(FastBuild, TheWrapperAndKbvAgreeOnTheKeyAndTheWrapperUsesOnlyWhatKbvBuilt) {
  fs::path d = temp_dir();
  FastBuild fb = fake_fast(d);
  fs::path ext = d / "ext";
  fs::create_directories(ext);
  const std::vector<std::string> flags = {"-DTORCH_API_INCLUDE_EXTENSION_H", "-isystem", (d / "inc").string(), "-fPIC",
                                          "-std=c++17", "-O3"};
  // torch's compile rule: $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
  std::vector<std::string> argv = {fb.wrapper.string(), "-MMD", "-MF", "main.o.d", "-DTORCH_EXTENSION_NAME=ext_x"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-c", (ext / "main.cpp").string(), "-o", (ext / "main.o").string()});
  std::map<std::string, std::string> env = {{"TORCH_EXTENSIONS_DIR", ext.string()},
                                            {"ARGS_OUT", (d / "args1").string()}};
  RunResult r = run_command(argv, env, std::chrono::seconds(30));
  ASSERT_EQ(r.status.code, 0) << r.output;
  const std::string key = pch_flags_key(flags);
  ASSERT_TRUE(fs::exists(ext / (".kbv-pch-want-" + key))) << "the wrapper's key is kbv's";
  EXPECT_EQ(lines_of(d / "args1").front(), "-MMD") << "without a precompiled header, the command is unchanged";
  // kbv (trusted) learns the flag set: a precompiled header under the same key, the want file gone.
  std::string error;
  ::setenv("ARGS_OUT", (d / "args-pch").c_str(), 1);
  EXPECT_EQ(learn_pch(fb, ext, error, 1), 1) << error;  // made at the first ask (FastBuild.AFlagSet...)
  ::unsetenv("ARGS_OUT");
  EXPECT_TRUE(fs::exists(fb.root / key / "torch" / "extension.h.gch"));
  EXPECT_TRUE(fs::exists(fb.root / key / "torch" / "extension.h")) << "GCC reads the header beside the .gch";
  EXPECT_FALSE(fs::exists(ext / (".kbv-pch-want-" + key)));
  std::vector<std::string> made = lines_of(d / "args-pch");  // the flags, then the header
  ASSERT_EQ(made.size(), flags.size() + 5);
  EXPECT_TRUE(std::equal(flags.begin(), flags.end(), made.begin()));
  EXPECT_EQ(made[flags.size() + 1], "c++-header");
  // The next compile with those flags puts it first on the include path.
  env["ARGS_OUT"] = (d / "args2").string();
  r = run_command(argv, env, std::chrono::seconds(30));
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_EQ(lines_of(d / "args2").front(), "-I" + (fb.root / key).string());
  // Other flags (-O2): another key, no precompiled header.
  std::vector<std::string> other = argv;
  std::replace(other.begin(), other.end(), std::string("-O3"), std::string("-O2"));
  env["ARGS_OUT"] = (d / "args3").string();
  r = run_command(other, env, std::chrono::seconds(30));
  EXPECT_EQ(lines_of(d / "args3").front(), "-MMD");
  // A link gets lld.
  env["ARGS_OUT"] = (d / "args4").string();
  r = run_command({fb.wrapper.string(), (ext / "main.o").string(), "-shared", "-L/x", "-o", (ext / "ext_x.so").string()},
                  env, std::chrono::seconds(30));
  EXPECT_EQ(lines_of(d / "args4").front(), "-fuse-ld=lld");
  fs::remove_all(d);
}

TEST(FastBuild, AFlagSetGetsItsHeaderOnceEnoughBuildsAskedForIt) {
  fs::path d = temp_dir();
  FastBuild fb = fake_fast(d);
  const std::vector<std::string> flags = {"-O3", "-fPIC"}, other = {"-O2", "-fPIC"};
  auto ask = [&](const std::vector<std::string>& f) {
    fs::path ext = d / "ext";
    fs::create_directories(ext);
    std::string text;
    for (const auto& x : f) text += x + std::string(1, '\0');
    write(ext / (".kbv-pch-want-" + pch_flags_key(f)), text);
    std::string error;
    ::setenv("ARGS_OUT", (d / "args").c_str(), 1);
    int built = learn_pch(fb, ext, error);
    ::unsetenv("ARGS_OUT");
    EXPECT_EQ(error, "");
    EXPECT_FALSE(fs::exists(ext / (".kbv-pch-want-" + pch_flags_key(f)))) << "the want file is consumed";
    return built;
  };
  const fs::path header = fb.root / pch_flags_key(flags) / "torch" / "extension.h.gch";
  for (int i = 1; i < kPchAfterAsks; ++i) {
    EXPECT_EQ(ask(flags), 0) << "ask " << i;
    EXPECT_FALSE(fs::exists(header)) << "made after " << i << " builds";
  }
  EXPECT_EQ(ask(other), 0) << "another flag set is counted apart";
  EXPECT_EQ(ask(flags), 1);
  EXPECT_TRUE(fs::exists(header));
  EXPECT_FALSE(fs::exists(fb.root / pch_flags_key(other) / "torch" / "extension.h.gch"));
  fs::remove_all(d);
}

TEST(FastBuild, ACandidateCannotPoisonThePrecompiledHeaders) {
  fs::path d = temp_dir();
  FastBuild fb = fake_fast(d);
  fs::path ext = d / "ext";
  fs::create_directories(ext);
  write(d / "evil.h", "#define torch evil\n");
  // What a hostile build can leave in its own folder: flags that read its own files or load a
  // plugin, untrusted include folders, a link to a file it wants kbv to read, a huge file.
  std::vector<std::vector<std::string>> hostile = {
      {"-O3", "-include", (d / "evil.h").string()},
      {"-O3", "-fplugin=" + (d / "evil.so").string()},
      {"-O3", "-isystem", d.string()},
      {"-O3", "-I" + d.string()},
  };
  for (const auto& flags : hostile) {
    std::string text;
    for (const auto& f : flags) text += f + std::string(1, '\0');
    write(ext / (".kbv-pch-want-" + pch_flags_key(flags)), text);
  }
  write(d / "secret", std::string("-O3\0", 4));
  fs::create_symlink(d / "secret", ext / ".kbv-pch-want-link");
  write(ext / ".kbv-pch-want-big", std::string(1 << 17, 'x'));
  std::string error;
  EXPECT_EQ(learn_pch(fb, ext, error), 0);
  EXPECT_NE(error, "");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(fb.root))
    if (e.path().filename() != "kbv-cxx") ++entries;
  EXPECT_EQ(entries, 0u) << "no precompiled header from a hostile flag set";
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(ext)) ADD_FAILURE() << "left: " << e.path();
  // A precompiled header built for one flag set is never used by another.
  EXPECT_EQ(build_pch(fb, {"-O3", "-isystem", (d / "inc").string()}), "");
  EXPECT_FALSE(fs::exists(fb.root / pch_flags_key({"-O2", "-isystem", (d / "inc").string()})));
  fs::remove_all(d);
}

TEST(FastBuild, AtMostSoManyPrecompiledHeadersPerToolchain) {
  fs::path d = temp_dir();
  FastBuild fb = fake_fast(d);
  ::setenv("ARGS_OUT", (d / "args").c_str(), 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(build_pch(fb, {"-O3", "-DN=" + std::to_string(i)}, 3), "");
  EXPECT_NE(build_pch(fb, {"-O3", "-DN=3"}, 3), "");
  ::unsetenv("ARGS_OUT");
  fs::remove_all(d);
}

TEST(FastBuild, APrecompileRunsInItsOwnFolderNotKbvs) {
  // GCC writes some outputs beside the compile (gcm.cache/ of -fmodules-ts, refused above): the
  // precompile runs in its temporary folder, which becomes the header's or is removed.
  fs::path d = temp_dir();
  FastBuild fb = fake_fast(d);
  write(d / "pwd-c++", "#!/bin/bash\npwd > \"$PWD_OUT\"\nexec \"$(dirname \"$0\")/fake-c++\" \"$@\"\n", true);
  fb.compiler = (d / "pwd-c++").string();
  ::setenv("ARGS_OUT", (d / "args").c_str(), 1);
  ::setenv("PWD_OUT", (d / "pwd").c_str(), 1);
  const std::vector<std::string> flags = {"-O3", "-isystem", (d / "inc").string()};
  EXPECT_EQ(build_pch(fb, flags), "");
  ::unsetenv("ARGS_OUT");
  ::unsetenv("PWD_OUT");
  std::vector<std::string> pwd = lines_of(d / "pwd");
  ASSERT_EQ(pwd.size(), 1u);
  const std::string root = fs::weakly_canonical(fb.root).string();
  EXPECT_EQ(pwd[0].rfind(root + "/" + pch_flags_key(flags) + ".tmp-", 0), 0u) << pwd[0];
  EXPECT_NE(fs::weakly_canonical(pwd[0]), fs::weakly_canonical(fs::current_path()));
  fs::remove_all(d);
}

TEST(FastBuild, OnlyAFailureNamingAPrecompiledHeaderIsTheFastBuildsFault) {
  const fs::path root = "/cache/pch/abc";
  const std::string key(64, 'e');
  // Every compile error names the wrapper (ninja echoes the command): the candidate's own error.
  EXPECT_FALSE(names_precompiled_header(
      "[1/2] /cache/pch/abc/kbv-cxx -MMD -c main.cpp\nmain.cpp:3:1: error: 'foo' was not declared", root));
  // With a header, the command names its folder too: still the candidate's error.
  EXPECT_FALSE(names_precompiled_header("/cache/pch/abc/kbv-cxx -I/cache/pch/abc/" + key + " -c main.cpp\n"
                                        "main.cpp:3:1: error: x",
                                        root));
  // GCC on the header itself, or an error located in the copy beside it: the fast build's.
  EXPECT_TRUE(names_precompiled_header("/cache/pch/abc/" + key + "/torch/extension.h.gch: not a PCH file", root));
  EXPECT_TRUE(names_precompiled_header("In file included from /cache/pch/abc/" + key + "/torch/extension.h:1", root));
  EXPECT_FALSE(names_precompiled_header("/cache/pch/abcd/" + key + "/torch/extension.h.gch", root));
}

}  // namespace compile_test
}  // namespace kbv
