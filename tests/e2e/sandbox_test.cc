// End-to-end: the sandbox (DESIGN.md, "Sandbox") really enforced. Each attack candidate of
// tests/data/sandbox runs under --sandbox strict, where every attempt must fail (verdict correct,
// nothing changed outside), and under --sandbox off as the control that shows the attempt works
// when nothing stops it (verdict runtime_error, "sandbox breached"), so the test can fail.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support.h"
#include "util/fs.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace sandbox_test {

using kbv::e2e::kSource;
using kbv::e2e::renamed_example;
using kbv::e2e::Outcome;

// Outside /tmp: inside the sandbox /tmp is the worker's scratch, so a victim under the host's /tmp
// would be out of the candidate's sight for the wrong reason.
fs::path scratch(const std::string& name) {
  fs::path d = fs::path(KBV_TEST_CACHE).parent_path() / "sandbox-e2e" / std::to_string(::getpid()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const fs::path kProblem = kSource / "problems/level1/19_ReLU.py";

// `kbv eval` of an attack candidate on the ReLU problem with `env` added to kbv's environment (the
// workers inherit it). No runtime audit, timing or compile: only whether the attack got through.
Outcome eval_attack(const std::string& candidate, const std::string& sandbox, const fs::path& dir,
                    std::map<std::string, std::string> env, const fs::path& problem = kProblem,
                    std::vector<std::string> extra = {}) {
  fs::path out = dir / ("record-" + sandbox + ".json");
  fs::remove(out);
  // scripts/gpu/sandbox.sh runs them on the GPU (CUDA IPC between the confined candidate and its reference).
  const char* device_env = std::getenv("KBV_SANDBOX_TEST_DEVICE");
  const std::string device = device_env && *device_env ? device_env : "cpu";
  std::vector<std::string> argv = {KBV_BINARY, "eval",      "--problem", problem.string(), "--solution",
                                   (kSource / "tests/data/sandbox" / candidate).string(),
                                   "--device",  device,      "--trials",  "1",              "--protocol",
                                   "kernelbench", "--policy", "lenient", "--sandbox", sandbox,
                                   "--json",    out.string()};
  if (std::find(extra.begin(), extra.end(), "--timing") == extra.end()) extra.insert(extra.end(), {"--timing", "off"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!env.count("KBV_CACHE_DIR")) env["KBV_CACHE_DIR"] = (dir / "cache").string();
  kbv::RunResult r = kbv::run_command(argv, env, std::chrono::seconds(900));
  Outcome o;
  o.code = r.status.exited ? r.status.code : -1;
  o.output = r.output + r.error;
  kbv::FileText t = kbv::read_file(out);
  if (t.ok) o.record = json::parse(t.text, nullptr, false);
  return o;
}

std::string why(const Outcome& o) {
  std::string text = o.record.is_object() ? o.record.value("message", "") : "";
  if (o.record.is_object() && o.record.contains("traceback")) text += "\n" + o.record["traceback"].dump();
  return text + "\n--- kbv output:\n" + o.output.substr(0, 4000);
}

// Strict: every attempt failed (the candidate is correct) and the record says every layer applied.
void expect_contained(const Outcome& o) {
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record.value("verdict", ""), "correct") << why(o);
  const json& sb = o.record["sandbox"];
  EXPECT_EQ(sb.value("mode", ""), "strict") << sb.dump();
  ASSERT_TRUE(sb.contains("layers")) << sb.dump();
  for (const auto& [layer, state] : sb["layers"].items()) {
    const std::string s = state.get<std::string>();
    EXPECT_TRUE(s == "applied" || s.rfind("not needed", 0) == 0) << layer << ": " << s;
  }
}

// Off: the same candidate got through (the control).
void expect_breached(const Outcome& o, const std::string& what) {
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.record.value("verdict", ""), "runtime_error") << why(o);
  EXPECT_NE(why(o).find("sandbox breached"), std::string::npos) << why(o);
  EXPECT_NE(why(o).find(what), std::string::npos) << why(o);
  EXPECT_EQ(o.record["sandbox"].value("mode", ""), "off");
}

// A folder's names, sizes and modification times.
std::map<std::string, std::string> listing(const fs::path& dir) {
  std::map<std::string, std::string> l;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    l[e.path().filename().string()] = std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
                                      std::to_string(st.st_mtim.tv_nsec);
  }
  return l;
}

// The worker's site-packages (where a .pth would persist).
std::vector<fs::path> site_packages() {
  std::vector<fs::path> found;
  fs::path prefix = fs::path(KBV_TEST_PYTHON).parent_path().parent_path();
  std::error_code ec;
  for (const auto& lib : {prefix / "lib", prefix / "lib64"})
    for (const auto& e : fs::directory_iterator(lib, ec))
      if (fs::exists(e.path() / "site-packages")) found.push_back(e.path() / "site-packages");
  return found;
}

TEST(Sandbox, NoSocketButUnixAndNoConnection) {
  fs::path dir = scratch("net");
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  auto accepted = [&] {
    int n = 0;
    for (int fd; (fd = ::accept(listener, nullptr, nullptr)) >= 0; ++n) ::close(fd);
    return n;
  };

  Outcome strict = eval_attack("net.py", "strict", dir, {{"KBV_ATTACK_PORT", port}});
  expect_contained(strict);
  EXPECT_EQ(accepted(), 0) << "a sandboxed candidate reached a TCP port of the host";

  Outcome off = eval_attack("net.py", "off", dir, {{"KBV_ATTACK_PORT", port}, {"KBV_ATTACK_SAFE", "1"}});
  expect_breached(off, "socket(AF_INET) created");
  EXPECT_NE(why(off).find("connected to 127.0.0.1:" + port), std::string::npos) << why(off);
  EXPECT_GE(accepted(), 1) << "the control: without the sandbox the candidate connects";
  ::close(listener);
}

TEST(Sandbox, NothingOutsideScratchIsWritable) {
  fs::path dir = scratch("fs");
  fs::path victims = dir / "victims", cache = dir / "cache";
  fs::create_directories(victims);
  fs::create_directories(cache / "baselines");
  fs::create_directories(cache / "calibration");
  ASSERT_TRUE(kbv::write_file_atomic(victims / "kbv.sqlite", "the run's store\n").empty());
  ASSERT_TRUE(kbv::write_file_atomic(victims / "19_ReLU.py", kbv::read_file(kProblem).text).empty());
  const std::string store = kbv::read_file(victims / "kbv.sqlite").text;
  const std::string problem = kbv::read_file(victims / "19_ReLU.py").text;
  const std::string passwd = kbv::read_file("/etc/passwd").text;
  std::vector<std::map<std::string, std::string>> venv_before;
  const std::vector<fs::path> sites = site_packages();
  ASSERT_FALSE(sites.empty()) << "no site-packages under " << KBV_TEST_PYTHON;
  for (const auto& s : sites) venv_before.push_back(listing(s));
  const auto baselines_before = listing(cache / "baselines"), calibration_before = listing(cache / "calibration");

  // The problem evaluated is the victim copy: the file in use must stay as it is.
  Outcome strict = eval_attack("fs.py", "strict", dir,
                               {{"KBV_ATTACK_DIR", victims.string()}, {"KBV_CACHE_DIR", cache.string()}},
                               victims / "19_ReLU.py");
  expect_contained(strict);
  EXPECT_EQ(kbv::read_file(victims / "kbv.sqlite").text, store);
  EXPECT_EQ(kbv::read_file(victims / "19_ReLU.py").text, problem);
  EXPECT_EQ(kbv::read_file("/etc/passwd").text, passwd);
  for (size_t i = 0; i < sites.size(); ++i) {
    EXPECT_EQ(listing(sites[i]), venv_before[i]) << sites[i] << " changed";
    EXPECT_FALSE(fs::exists(sites[i] / "kbv_sandbox_evil.pth"));
  }
  EXPECT_EQ(listing(cache / "baselines"), baselines_before);
  EXPECT_EQ(listing(cache / "calibration"), calibration_before);
  EXPECT_FALSE(fs::exists(cache / "kbv_sandbox_evil.json"));

  Outcome off = eval_attack("fs.py", "off", dir,
                            {{"KBV_ATTACK_DIR", victims.string()}, {"KBV_ATTACK_SAFE", "1"}, {"KBV_CACHE_DIR", cache.string()}},
                            victims / "19_ReLU.py");
  expect_breached(off, "wrote " + (victims / "kbv.sqlite").string());
  EXPECT_NE(kbv::read_file(victims / "kbv.sqlite").text, store) << "the control: without the sandbox it writes";
}

// The fast build's wrapper and precompiled headers (DESIGN.md, "The compile step") are shared by
// every candidate's build: read-only to the build and candidate workers, so that no candidate can
// make another's build use its code.
TEST(Sandbox, TheSharedBuildFilesAreReadOnlyToCandidates) {
  fs::path dir = scratch("pch");
  fs::path cache = dir / "cache";
  Outcome strict = eval_attack("pch.py", "strict", dir, {{"KBV_CACHE_DIR", cache.string()}});
  expect_contained(strict);
  size_t wrappers = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache / "pch")) {
    EXPECT_EQ(e.path().filename().string().find("evil"), std::string::npos) << e.path();
    EXPECT_EQ(e.path().filename().string().find(".moved"), std::string::npos) << e.path();
    if (e.path().filename() == "kbv-cxx") {
      ++wrappers;
      EXPECT_EQ(kbv::read_file(e.path()).text.find("evil"), std::string::npos) << e.path();
    }
  }
  EXPECT_EQ(wrappers, 1u);

  Outcome off = eval_attack("pch.py", "off", dir, {{"KBV_ATTACK_SAFE", "1"}, {"KBV_CACHE_DIR", cache.string()}});
  expect_breached(off, "created " + (cache / "pch").string());
}

TEST(Sandbox, NoOtherProcessIsReadable) {
  fs::path dir = scratch("proc");
  Outcome strict = eval_attack("proc.py", "strict", dir, {});
  expect_contained(strict);
  Outcome off = eval_attack("proc.py", "off", dir, {{"KBV_ATTACK_SAFE", "1"}});
  expect_breached(off, "sees the reference worker");
  EXPECT_NE(why(off).find("/mem"), std::string::npos) << "the control reads the reference's memory: " << why(off);
}

TEST(Sandbox, TheGradersProcessesCannotBeSignalledOrPinned) {
  fs::path dir = scratch("signals");
  Outcome strict = eval_attack("signals.py", "strict", dir, {});
  expect_contained(strict);
  Outcome off = eval_attack("signals.py", "off", dir, {{"KBV_ATTACK_SAFE", "1"}});
  expect_breached(off, "signal 0 to the parent");
  EXPECT_NE(why(off).find("sched_setaffinity on the reference"), std::string::npos) << why(off);
}

// The worker zygote (DESIGN.md "Worker zygote"): no fork holds the zygote's socket or another
// worker's request, under any --sandbox; under strict the zygote is out of reach as well.
TEST(Sandbox, AForkOfTheZygoteHoldsNeitherItsSocketNorAnotherWorkersRequest) {
  fs::path dir = scratch("zygote");
  Outcome strict = eval_attack("zygote.py", "strict", dir, {});
  expect_contained(strict);
  Outcome off = eval_attack("zygote.py", "off", dir, {{"KBV_ATTACK_SAFE", "1"}});
  expect_breached(off, "signal 0 to the worker zygote");
  EXPECT_EQ(why(off).find("SOCK_SEQPACKET"), std::string::npos) << why(off);
  EXPECT_EQ(why(off).find("fork request"), std::string::npos) << why(off);
  EXPECT_EQ(why(off).find("the attack is broken"), std::string::npos) << why(off);
}

// T21 with the timing on: the candidate pins the reference's threads to one CPU and renices them.
// Strict: the calls fail, nothing to say. Off: kbv finds the change before the baselines are timed,
// sets it back and warns `reference_disturbed`.
TEST(Sandbox, APinnedReferenceIsSetBackBeforeTheBaselines) {
  fs::path dir = scratch("pin");
  const std::vector<std::string> timed = {"--timing", "on", "--baselines", "fp32", "--time-cap", "0.2"};
  auto disturbed = [](const Outcome& o) {
    for (const auto& f : o.record["findings"])
      if (f["rule"] == "reference_disturbed") return f["message"].get<std::string>();
    return std::string();
  };
  Outcome strict = eval_attack("pin.py", "strict", dir, {}, kProblem, timed);
  expect_contained(strict);
  EXPECT_EQ(disturbed(strict), "") << strict.record["findings"].dump(1);

  Outcome off = eval_attack("pin.py", "off", dir, {}, kProblem, timed);
  ASSERT_EQ(off.code, 0) << off.output;
  EXPECT_EQ(off.record.value("verdict", ""), "correct") << why(off);
  const std::string message = disturbed(off);
  EXPECT_NE(message.find("nice 19"), std::string::npos) << "the control: without the sandbox it renices\n" << why(off);
  EXPECT_NE(message.find("set back before the baselines were timed"), std::string::npos) << message;
  if (::sysconf(_SC_NPROCESSORS_ONLN) > 1) {
    EXPECT_NE(message.find("affinity "), std::string::npos) << message;
  }
}

// A candidate that floods its output: the worker's log is bounded (util/log_pump.h), its end kept.
TEST(Sandbox, AFloodedWorkerLogIsBounded) {
  fs::path dir = scratch("flood");
  Outcome o = eval_attack("flood.py", "strict", dir, {});
  expect_contained(o);
  int candidate_logs = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "cache" / "logs", ec)) {
    EXPECT_LE(fs::file_size(e.path()), (16u << 20) + 200) << e.path();
    if (e.path().filename().string().rfind("candidate-", 0) != 0) continue;
    const std::string log = kbv::read_file(e.path()).text;
    if (log.find("bytes of output dropped here") == std::string::npos) continue;
    ++candidate_logs;
    EXPECT_NE(log.find("the flood is over"), std::string::npos) << "the last output is kept";
  }
  EXPECT_GE(candidate_logs, 1) << "a candidate worker's log was cut";
}

TEST(Sandbox, FilesLeftInTmpAreGone) {
  fs::path dir = scratch("tmp");
  const std::string marker = "e2e-" + std::to_string(::getpid());
  const std::vector<fs::path> left = {"/tmp/kbv-sandbox-left-" + marker, "/dev/shm/kbv-sandbox-left-" + marker,
                                      "/var/tmp/kbv-sandbox-left-" + marker};
  for (const auto& f : left) fs::remove(f);
  // What a kbv killed midway left (its pid is gone): swept by the next kbv that starts a worker.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  const fs::path dead_shm = "/dev/shm/kbv-sbx-" + std::to_string(gone) + "-0";
  const fs::path dead_scratch = dir / "cache" / "scratch" / ("candidate-" + std::to_string(gone) + "-0");
  fs::create_directories(dead_shm);
  fs::create_directories(dead_scratch);
  Outcome strict = eval_attack("tmp.py", "strict", dir, {{"KBV_ATTACK_MARKER", marker}});
  expect_contained(strict);
  EXPECT_FALSE(fs::exists(dead_shm)) << "a dead kbv's /dev/shm folder is swept";
  EXPECT_FALSE(fs::exists(dead_scratch)) << "a dead kbv's scratch folder is swept";
  for (const auto& f : left) EXPECT_FALSE(fs::exists(f)) << f << " outlived a sandboxed evaluation";
  std::error_code ec;
  size_t scratch_left = 0;
  for (const auto& e : fs::directory_iterator(dir / "cache" / "scratch", ec)) {
    (void)e;
    ++scratch_left;
  }
  EXPECT_EQ(scratch_left, 0u) << "the workers' scratch folders are removed when they end";
  size_t shm_left = 0;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().find("kbv-sbx-") == 0 && fs::exists(e.path() / ("kbv-sandbox-left-" + marker)))
      ++shm_left;
  EXPECT_EQ(shm_left, 0u);

  Outcome off = eval_attack("tmp.py", "off", dir, {{"KBV_ATTACK_MARKER", marker}});
  ASSERT_EQ(off.record.value("verdict", ""), "correct") << why(off);
  EXPECT_TRUE(fs::exists(left[0])) << "the control: without the sandbox the file stays in /tmp";
  for (const auto& f : left) fs::remove(f);
}

// A candidate that fills the host's storage (examples/level1/19_ReLU/cpu_fill_host.py: 1 GiB over
// files in its /tmp and /dev/shm, an unlinked open file and a memfd) is killed past --write-cap-mib
// and rejected; with the watch off the same candidate is correct, so the watch is what rejects it.
TEST(WriteCap, TheWatchIsWhatRejectsIt) {
  fs::path dir = scratch("fill");
  // The example under an extension name of this test process's own, built in the tests' shared
  // cache: a cache entry no other evaluation uses (the corpus evaluates the example itself, whose
  // pieces in the same entry would be counted here), compiled with the shared cache's precompiled
  // header (a cache of this test's own compiled it without, ~20 CPU s).
  const std::string name = "kbv_fill_host_" + std::to_string(::getpid());
  const std::string source = renamed_example(kSource / "examples/level1/19_ReLU/cpu_fill_host.py",
                                             "kbv_ex_l1_19_relu_cpu_fill_host", name);
  ASSERT_FALSE(source.empty());
  const fs::path fill = dir / "cpu_fill_host.py";
  ASSERT_TRUE(kbv::write_file_atomic(fill, source).empty());
  const std::map<std::string, std::string> shared_cache = {{"KBV_CACHE_DIR", KBV_TEST_CACHE}};
  Outcome capped = eval_attack(fill, "strict", dir, shared_cache, kProblem, {"--write-cap-mib", "256"});
  ASSERT_EQ(capped.code, 0) << capped.output;
  EXPECT_EQ(capped.record.value("verdict", ""), "rejected") << why(capped);
  EXPECT_NE(why(capped).find("over the cap of 0.25 GiB"), std::string::npos) << why(capped);
  bool found = false;
  for (const auto& f : capped.record["findings"]) found = found || f.value("rule", "") == "write_cap_exceeded";
  EXPECT_TRUE(found) << capped.record["findings"].dump(2);
  // Its pieces in the build folder (the build's cache entry, which outlives the worker) went with it.
  auto pieces_left = [&] {
    int n = 0, entries = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(KBV_TEST_CACHE) / "build", ec)) {
      if (!fs::exists(entry.path() / "ext" / name)) continue;  // another source's entry
      ++entries;
      std::error_code walk;
      for (auto it = fs::recursive_directory_iterator(entry.path(), walk);
           !walk && it != fs::recursive_directory_iterator(); it.increment(walk))
        n += it->path().filename().string().rfind("kbv-fill-", 0) == 0;
    }
    EXPECT_GE(entries, 1) << "no cache entry of " << name << " to look in";
    return n;
  };
  EXPECT_EQ(pieces_left(), 0);
  Outcome open = eval_attack(fill, "strict", dir, shared_cache, kProblem, {"--write-cap-mib", "0"});
  ASSERT_EQ(open.code, 0) << open.output;
  EXPECT_EQ(open.record.value("verdict", ""), "correct") << why(open);
  EXPECT_EQ(pieces_left(), 0) << "what a candidate adds to its build folder is removed at its end";
}

// T17 in the sandbox: a process that left the worker's group is named and gone with the worker's
// PID namespace before the baselines are timed.
TEST(Sandbox, AProcessLeftInTheNamespaceIsNamedAndGone) {
  fs::path dir = scratch("stray");
  Outcome o = eval_attack("stray.py", "strict", dir, {}, kProblem,
                          {"--timing", "on", "--baselines", "fp32", "--time-cap", "0.3"});
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.record.value("verdict", ""), "correct") << why(o);
  int said = 0;
  for (const auto& f : o.record["findings"])
    if (f.value("rule", "") == "process_left_running") {
      ++said;
      const std::string m = f.value("message", "");
      EXPECT_NE(m.find("while :; do sleep"), std::string::npos) << m;
      // "pid N (command)": that process no longer exists.
      size_t at = m.find("pid ");
      ASSERT_NE(at, std::string::npos) << m;
      const int pid = std::stoi(m.substr(at + 4));
      EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid) + "/cmdline") &&
                   kbv::read_file("/proc/" + std::to_string(pid) + "/cmdline").text.find("while") != std::string::npos)
          << "pid " << pid << " outlived the evaluation";
    }
  EXPECT_EQ(said, 1) << o.record["findings"].dump(1);
  EXPECT_EQ(o.record["sandbox"]["layers"]["pid_namespace"], "applied");
}

// Strict refuses, naming the layer and how to enable it, when a layer cannot be applied (simulated
// with KBV_SANDBOX_UNAVAILABLE); best-effort runs and records the layer as unavailable.
TEST(Sandbox, StrictRefusesWhenALayerIsUnavailable) {
  fs::path dir = scratch("refuse");
  Outcome strict = eval_attack("net.py", "strict", dir, {{"KBV_SANDBOX_UNAVAILABLE", "seccomp"}});
  EXPECT_EQ(strict.code, 2) << strict.output;
  EXPECT_NE(strict.output.find("the seccomp layer cannot be applied"), std::string::npos) << strict.output;
  EXPECT_NE(strict.output.find("libseccomp-dev"), std::string::npos) << strict.output;
  EXPECT_TRUE(strict.record.is_null()) << "nothing evaluated, nothing written: " << strict.record.dump();

  Outcome best = eval_attack("proc.py", "best-effort", dir, {{"KBV_SANDBOX_UNAVAILABLE", "landlock"}});
  ASSERT_EQ(best.code, 0) << best.output;
  EXPECT_NE(best.output.find("running without landlock"), std::string::npos) << best.output;
  EXPECT_EQ(best.record.value("verdict", ""), "correct") << why(best);
  EXPECT_EQ(best.record["sandbox"]["mode"], "best-effort");
  EXPECT_EQ(best.record["sandbox"]["layers"]["landlock"], "unavailable: marked unavailable by KBV_SANDBOX_UNAVAILABLE");
  EXPECT_EQ(best.record["sandbox"]["layers"]["seccomp"], "applied");
}

// A cache inside a folder only its owner may enter, under /tmp (as `mktemp -d` makes): the worker's
// scratch is bound on /tmp and the folder is covered for uid 65534, so the mount points are made
// in the new view before the cover and the reveals go on. It failed before ("the mount_namespace
// layer failed: No such file or directory", reported as the host's failure).
TEST(Sandbox, ACacheInsideAPrivateFolderUnderTmpIsReachable) {
  char tmpl[] = "/tmp/kbv-e2e-private-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;  // mode 0700
  Outcome o = eval_attack("proc.py", "strict", dir, {{"KBV_CACHE_DIR", (dir / "rel" / "cache").string()}});
  expect_contained(o);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace sandbox_test
