// End-to-end: warm candidate workers (--warm-workers, DESIGN.md "Warm workers"). A pool hands each
// pre-started worker to exactly one candidate, the next candidate's worker was started before the
// previous candidate ran, and a candidate cannot reach the worker that waits for the next one.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "record/record.h"
#include "store/store.h"
#include "supervisor/session.h"
#include "supervisor/warm_pool.h"
#include "support.h"
#include "util/fs.h"
#include "util/sched.h"
#include "util/subprocess.h"

namespace kbv::e2e {
namespace warm_test {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

WorkerConfig strict_config(const fs::path& dir, int warm_workers) {
  WorkerConfig c = default_worker_config(KBV_TEST_PYTHON);
  c.log_dir = dir / "logs";
  c.scratch_dir = dir / "scratch";
  c.sandbox = sandbox::Mode::strict;
  c.warm_workers = warm_workers;
  return c;
}

TEST(Warm, TheNextCandidateGetsAProcessStartedBeforeThePreviousRanAndNoneServesTwo) {
  const fs::path dir = scratch_dir("warm", "pool");
  WorkerConfig config = strict_config(dir, 1);
  if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
    GTEST_SKIP() << "the pool needs every sandbox layer: " << why;
  ASSERT_EQ(warm_pool_off_reason(config), "");
  std::string error;
  auto reference = WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(reference) << error;

  // A build folder as the cache holds one: an extension folder with its files and torch's lock.
  const fs::path ext = dir / "ext";
  fs::create_directories(ext / "kbv_x");
  ASSERT_EQ(write_file_atomic(ext / "kbv_x" / "kbv_x.so", "built"), "");
  ASSERT_EQ(write_file_atomic(ext / "kbv_x" / "lock", ""), "");
  const auto built_at = fs::last_write_time(ext / "kbv_x" / "kbv_x.so") - std::chrono::hours(1);
  fs::last_write_time(ext / "kbv_x" / "kbv_x.so", built_at);
  const std::map<std::string, std::string> env = {{"TORCH_EXTENSIONS_DIR", ext.string()}};
  const WorkerTarget target{{}, reference.get(), {}};

  WarmPool pool;
  std::set<int> served;  // every process that was handed a candidate
  bool warm = true;
  auto first = pool.take(config, env, target, seconds(120), warm, error);
  ASSERT_TRUE(first) << error;
  EXPECT_FALSE(warm) << "nothing was held before the first candidate";
  ASSERT_EQ(pool.held().size(), 1u) << "the pool refills as it hands a worker out";
  WarmPool::Held next = pool.held()[0];
  EXPECT_NE(next.pid, first->pid());

  for (int candidate = 1; candidate <= 3; ++candidate) {
    // The previous candidate runs (any request), then its worker is discarded.
    const Clock::time_point previous_runs = Clock::now();
    Reply r = first->call(msg::to_json(msg::HelloRequest{}), seconds(120));
    ASSERT_EQ(r.status, Reply::Status::ok) << r.detail;
    EXPECT_TRUE(served.insert(first->pid()).second) << "pid " << first->pid() << " served two candidates";
    first.reset();

    auto w = pool.take(config, env, target, seconds(120), warm, error);
    ASSERT_TRUE(w) << error;
    EXPECT_TRUE(warm) << "candidate " << candidate;
    EXPECT_EQ(w->pid(), next.pid) << "candidate " << candidate << " got the process the pool held";
    EXPECT_LT(next.started, previous_runs) << "started before the previous candidate ran";
    EXPECT_EQ(served.count(w->pid()), 0u) << "pid " << w->pid() << " already served a candidate";
    for (const auto& h : pool.held()) EXPECT_EQ(served.count(h.pid), 0u) << "a used process back in the pool";

    // Handed the build: its own copy in its /tmp/kbv-ext, times kept, torch's lock left out.
    const fs::path copy = w->scratch() / "kbv-ext" / "kbv_x";
    EXPECT_EQ(read_file(copy / "kbv_x.so").text, "built");
    EXPECT_EQ(fs::last_write_time(copy / "kbv_x.so"), built_at);
    EXPECT_FALSE(fs::exists(copy / "lock"));
    EXPECT_EQ(w->sandbox_record().value("mode", ""), "strict");

    ASSERT_EQ(pool.held().size(), 1u);
    next = pool.held()[0];
    first = std::move(w);
  }
}

// Where the host has cores to spare, the next candidate's worker starts on a CPU of its own (a CPU
// lease no other kbv evaluation holds), so settle() need not wait for its start-up; handed to its
// candidate it is back on kbv's own CPUs. With fewer CPUs than KBV_WARM_BESIDE_MIN_CPUS it starts
// unpinned and settle() waits for it, as before.
TEST(Warm, AReplacementStartsOnACpuOfItsOwnWhereCoresAreSpare) {
  const fs::path dir = scratch_dir("warm", "beside");
  WorkerConfig config = strict_config(dir, 1);
  if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
    GTEST_SKIP() << "the pool needs every sandbox layer: " << why;
  ::setenv("KBV_WARM_BESIDE_MIN_CPUS", "1", 1);
  std::string error;
  auto reference = WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(reference) << error;
  const WorkerTarget target{{}, reference.get(), {}};
  WarmPool pool;
  bool warm = true;
  auto running = pool.take(config, {}, target, seconds(120), warm, error);
  ASSERT_TRUE(running) << error;
  ASSERT_EQ(pool.held().size(), 1u);
  const WarmPool::Held next = pool.held()[0];
  if (next.beside.empty()) {
    ::unsetenv("KBV_WARM_BESIDE_MIN_CPUS");
    GTEST_SKIP() << "every CPU was leased by other kbv evaluations (ctest -j): none to start beside on";
  }
  ASSERT_EQ(next.beside.size(), 1u);
  EXPECT_EQ(affinity_of(next.pid), next.beside) << "the starting worker runs on its own CPU";
  // The CPU is leased for it: another evaluation's lease does not get it.
  const std::string lock = CpuLease::default_lock_dir() + "/cpu" + std::to_string(next.beside[0]) + ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << lock;
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the CPU's lock is held while the worker waits";
  ::close(fd);
  pool.settle(std::chrono::milliseconds(1));  // the pair's settle: nothing to wait for
  ASSERT_EQ(pool.held().size(), 1u) << "a worker starting on a CPU of its own is not pinged, nor stopped";

  // Handed to the next candidate (take pings it first): back on kbv's own CPUs, not pinned.
  running.reset();
  ::setenv("KBV_WARM_BESIDE_MIN_CPUS", "100000", 1);  // the replacement of this take: no CPU of its own
  auto w = pool.take(config, {}, target, seconds(120), warm, error);
  ::unsetenv("KBV_WARM_BESIDE_MIN_CPUS");
  ASSERT_TRUE(w) << error;
  EXPECT_TRUE(warm);
  EXPECT_EQ(w->pid(), next.pid);
  EXPECT_TRUE(w->cpus().empty());
  EXPECT_EQ(affinity_of(w->pid()), affinity_of(0)) << "unpinned when handed its candidate";
  ASSERT_EQ(pool.held().size(), 1u);
  EXPECT_TRUE(pool.held()[0].beside.empty()) << "fewer CPUs than KBV_WARM_BESIDE_MIN_CPUS: none of its own";
}

// A waiting worker that fails its ping in settle() is stopped: its cleanup must leave the files
// of the candidate that runs beside it in the /dev/shm folder they share with their reference (a
// pre-started worker made none there); the candidate's own end removes them.
TEST(Warm, AWaitingWorkerStoppedInSettleLeavesTheRunningCandidatesFiles) {
  const fs::path dir = scratch_dir("warm", "settle");
  WorkerConfig config = strict_config(dir, 1);
  if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
    GTEST_SKIP() << "the pool needs every sandbox layer: " << why;
  std::string error;
  auto reference = WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(reference) << error;
  ASSERT_FALSE(reference->shm_dir().empty()) << "a sandboxed reference shares a /dev/shm folder of its own";
  const WorkerTarget target{{}, reference.get(), {}};
  WarmPool pool;
  bool warm = true;
  auto running = pool.take(config, {}, target, seconds(120), warm, error);
  ASSERT_TRUE(running) << error;
  ASSERT_EQ(pool.held().size(), 1u) << "the pool refills as it hands a worker out";

  // A transfer buffer of the running candidate (src/worker/transfer.cc names them kbv-<pid>-...;
  // its pid is its PID namespace's), and one of the reference's.
  const fs::path candidates = reference->shm_dir() / "kbv-3-0-c0ffee";
  const fs::path references = reference->shm_dir() / ("kbv-" + std::to_string(reference->pid()) + "-0-beef");
  ASSERT_EQ(write_file_atomic(candidates, "candidate"), "");
  ASSERT_EQ(write_file_atomic(references, "reference"), "");

  // The waiting worker dies: its ping fails. Writing the ping to it may raise SIGPIPE, which kbv
  // ignores process-wide (cli/main.cc) and this test too.
  std::signal(SIGPIPE, SIG_IGN);
  kill_group(pool.held()[0].pid);
  pool.settle(seconds(30), true);
  EXPECT_TRUE(pool.held().empty()) << "a worker that does not answer is stopped";
  EXPECT_TRUE(fs::exists(candidates)) << "the stopped waiting worker removed the running candidate's buffer";
  EXPECT_TRUE(fs::exists(references));

  // The candidate's end takes its files, and also the file named as the reference's: the reference
  // does not map it, so it is a plant (cpu_shm_plant.py; the reference's live buffers, which it
  // maps, stay: Warm.APlantInTheSharedFolderDoesNotOutliveItsCandidate evaluates through them).
  running.reset();
  EXPECT_FALSE(fs::exists(candidates));
  EXPECT_FALSE(fs::exists(references));
}

TEST(Warm, OffUnderSandboxOffAndWithZero) {
  const fs::path dir = scratch_dir("warm", "off");
  WorkerConfig config = strict_config(dir, 0);
  EXPECT_NE(warm_pool_off_reason(config), "");
  config.warm_workers = 2;
  config.sandbox = sandbox::Mode::off;
  EXPECT_NE(warm_pool_off_reason(config).find("--sandbox off"), std::string::npos);

  std::string error;
  auto reference = WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(reference) << error;
  WarmPool pool;
  bool warm = true;
  auto w = pool.take(config, {}, WorkerTarget{{}, reference.get(), {}}, seconds(120), warm, error);
  ASSERT_TRUE(w) << error;
  EXPECT_FALSE(warm);
  EXPECT_TRUE(pool.held().empty()) << "no process waits beside a candidate that runs as kbv's user";
}

// `kbv eval --run` of two ReLU samples with --warm-workers 1: an attack candidate of
// examples/level1/19_ReLU (sample 0), then the honest one (sample 1). The worker for sample 1 is
// started as sample 0's starts and waits beside it: the target.
struct RunOutcome {
  int code = -1;
  std::string output;
  std::map<int, nlohmann::json> records;  // by sample id
  int pid = -1;                            // kbv's: its workers' logs are <role>-<pid>-<n>.log
  fs::file_time_type started;              // a little before kbv started
};

RunOutcome eval_attack(const std::string& attack, const std::string& sandbox, const fs::path& dir,
                       const std::map<std::string, std::string>& env, const std::string& second = "cpu_honest.py") {
  const fs::path run = dir / ("run-" + sandbox);
  fs::remove_all(run);
  fs::create_directories(run);
  fs::copy_file(kSource / "examples/level1/19_ReLU" / attack, run / "level_1_problem_19_sample_0_kernel.py");
  fs::copy_file(kSource / "examples/level1/19_ReLU" / second, run / "level_1_problem_19_sample_1_kernel.py");
  std::vector<std::string> argv = {KBV_BINARY, "eval", "--problems", (kSource / "problems").string(), "--run",
                                   run.string(), "--level", "1", "--device", "cpu", "--trials", "1", "--timing",
                                   "off", "--policy", "lenient", "--sandbox", sandbox, "--warm-workers", "1"};
  // The tests' shared cache: these example files are the corpus's, so their builds are its cache
  // entries (a cache of this test's own compiled each one again, without the precompiled header).
  // Its candidate logs are told apart by kbv's pid (candidate_logs).
  SpawnOptions so;
  so.argv = argv;
  so.env_set = env;
  so.env_set["KBV_CACHE_DIR"] = KBV_TEST_CACHE;
  so.protocol_pipes = false;
  so.log_path = run / "kbv.log";
  RunOutcome o;
  // A file's time is the kernel's coarse clock, which may lag this one by a tick.
  o.started = fs::file_time_type::clock::now() - seconds(1);
  std::string error;
  std::optional<Child> kbv = spawn(so, error);
  if (!kbv) {
    o.output = "kbv did not start: " + error;
    return o;
  }
  o.pid = kbv->pid;
  std::optional<ExitStatus> status = wait_for(kbv->pid, seconds(900));
  if (!status) status = kill_group(kbv->pid);
  o.code = status->exited ? status->code : -1;
  o.output = read_file(run / "kbv.log").text;
  if (auto store = Store::open(run / "kbv.sqlite", error, Store::Mode::read_only))
    for (const Record& rec : store->latest()) o.records[rec.sample_id] = to_json(rec);
  return o;
}

std::string said(const RunOutcome& o) {
  std::string text;
  for (const auto& [sample, rec] : o.records)
    text += "sample " + std::to_string(sample) + ": " + rec.value("verdict", "") + ": " + rec.value("message", "") + "\n";
  return text + "--- kbv output:\n" + o.output.substr(0, 4000);
}

// The candidate workers the kbv of `o` started: their logs in the shared cache's logs folder, named
// candidate-<kbv's pid>-<n>.log (supervisor/session.cc) and written since it started (pids are
// reused and a log is appended to, so an older kbv's log of the same name counts only if this one
// wrote it too).
size_t candidate_logs(const RunOutcome& o) {
  const std::string prefix = "candidate-" + std::to_string(o.pid) + "-";
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(KBV_TEST_CACHE) / "logs", ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    std::error_code time_ec;
    const fs::file_time_type written = e.last_write_time(time_ec);
    if (!time_ec && written >= o.started) ++n;
  }
  return n;
}

// Strict: both samples correct (the attack found nothing), the second ran in the worker that
// waited beside the first, every layer applied to both.
void expect_contained(const RunOutcome& o) {
  ASSERT_EQ(o.code, 0) << o.output;
  ASSERT_EQ(o.records.size(), 2u) << said(o);
  for (const auto& [sample, rec] : o.records) {
    EXPECT_EQ(rec.value("verdict", ""), "correct") << said(o);
    for (const auto& [layer, state] : rec["sandbox"]["layers"].items()) {
      const std::string st = state.get<std::string>();
      EXPECT_TRUE(st == "applied" || st.rfind("not needed", 0) == 0) << layer << ": " << st;
    }
  }
  EXPECT_EQ(o.records.at(0).value("warm_worker", true), false) << "the first candidate of a reference starts cold";
  EXPECT_EQ(o.records.at(1).value("warm_worker", false), true) << "the second got the worker that waited";
  EXPECT_EQ(candidate_logs(o), 2u) << "one worker per candidate, none started for a third";
}

// A process that looks like a candidate worker waiting for its candidate, as kbv's user: what a
// pool would leave beside a candidate under --sandbox off.
std::optional<Child> decoy(const fs::path& dir, std::string& error) {
  SpawnOptions o;
  // Killed by the test when done; an hour, so that it outlives two evaluations on a crowded machine.
  o.argv = {KBV_TEST_PYTHON, "-c", "import time  # kbv_worker\ntime.sleep(3600)", "candidate"};
  o.protocol_pipes = false;
  o.log_path = dir / "decoy.log";
  return spawn(o, error);
}

TEST(Warm, ACandidateCannotReachTheWorkerWaitingForTheNext) {
  if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
    GTEST_SKIP() << "needs every sandbox layer: " << why;
  const fs::path dir = scratch_dir("warm", "reach");
  std::string error;
  std::optional<Child> waiting = decoy(dir, error);
  ASSERT_TRUE(waiting) << error;

  // Strict: neither the pool's waiting worker nor the decoy is in sight, and nothing on their
  // import path can be written.
  RunOutcome strict = eval_attack("cpu_reach_warm_worker.py", "strict", dir, {});
  expect_contained(strict);

  // Off: no pool (each candidate started for itself), and the same candidate reaches a same-user
  // process that waits as a warm worker would: the reason the pool is off there.
  RunOutcome off = eval_attack("cpu_reach_warm_worker.py", "off", dir, {{"KBV_ATTACK_SAFE", "1"}});
  ASSERT_EQ(off.code, 0) << off.output;
  ASSERT_EQ(off.records.size(), 2u) << said(off);
  EXPECT_EQ(off.records.at(0).value("verdict", ""), "runtime_error") << said(off);
  EXPECT_NE(off.records.at(0).value("message", "").find("sandbox breached: signalled the candidate worker"),
            std::string::npos)
      << said(off);
  for (const auto& [sample, rec] : off.records) EXPECT_EQ(rec.value("warm_worker", true), false) << said(off);
  kill_group(waiting->pid);
}

// A candidate's files in the /dev/shm folder of its reference, named as the reference's own, do not
// outlive it: sample 1 (the same file, in the worker that waited beside sample 0) finds no plant
// of sample 0's and raises if it does (examples/level1/19_ReLU/cpu_shm_plant.py).
TEST(Warm, APlantInTheSharedFolderDoesNotOutliveItsCandidate) {
  if (std::string why = sandbox::refusal(sandbox::Mode::strict, sandbox::probe()); !why.empty())
    GTEST_SKIP() << "needs every sandbox layer: " << why;
  const fs::path dir = scratch_dir("warm", "plant");
  RunOutcome o = eval_attack("cpu_shm_plant.py", "strict", dir, {}, "cpu_shm_plant.py");
  expect_contained(o);
}

}  // namespace warm_test
}  // namespace kbv::e2e
