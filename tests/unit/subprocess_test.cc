#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "util/fs.h"
#include "util/pause.h"
#include "util/subprocess.h"

namespace kbv {
namespace subprocess_test {

using namespace std::chrono_literals;

class Subprocess : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "kbv_subprocess_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string read(const std::filesystem::path& p) {
    FileText t = read_file(p);
    return t.ok ? t.text : "<" + t.error + ">";
  }

  // Spawns, waits up to 5 s, returns the status (the test fails if it does not end).
  ExitStatus run_to_end(const SpawnOptions& options) {
    std::string error;
    auto child = spawn(options, error);
    EXPECT_TRUE(child.has_value()) << error;
    if (!child) return {};
    ::close(child->to_child);
    ::close(child->from_child);
    auto status = wait_for(child->pid, 5000ms);
    EXPECT_TRUE(status.has_value());
    if (!status) return kill_group(child->pid);
    return *status;
  }

  std::filesystem::path dir_;
};

std::string read_all(int fd) {
  std::string out;
  char buffer[256];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

TEST_F(Subprocess, OutputAndErrorsAppendToLog) {
  SpawnOptions o;
  o.log_path = dir_ / "child.log";
  o.argv = {"sh", "-c", "echo out; echo err >&2"};
  ExitStatus s = run_to_end(o);
  EXPECT_TRUE(s.exited);
  EXPECT_EQ(s.code, 0);
  o.argv = {"echo", "again"};
  run_to_end(o);
  EXPECT_EQ(read(o.log_path), "out\nerr\nagain\n");
  EXPECT_EQ(tail_file(o.log_path, 6), "again\n");
  EXPECT_EQ(tail_file(o.log_path, 1000), "out\nerr\nagain\n");
  EXPECT_EQ(tail_file(dir_ / "absent.log", 100), "");
}

// A bounded log (util/log_pump.h): the same lines as the file itself below the cap, appended
// after what the file held; a flood keeps its head and its last bytes (where a traceback is), with
// a line saying how much was dropped, and the file stays within the cap.
TEST_F(Subprocess, ABoundedLogKeepsItsHeadAndTailAndSaysWhatItDropped) {
  SpawnOptions o;
  o.log_path = dir_ / "capped.log";
  o.log_cap = LogCap{1u << 20, 64u << 10};
  o.argv = {"sh", "-c", "echo out; echo err >&2"};
  run_to_end(o);
  drain_log(o.log_path, 2000ms);
  EXPECT_EQ(read(o.log_path), "out\nerr\n");
  o.argv = {"echo", "again"};
  run_to_end(o);
  drain_log(o.log_path, 2000ms);
  EXPECT_EQ(read(o.log_path), "out\nerr\nagain\n") << "appended, like the file itself";

  o.log_path = dir_ / "flood.log";
  o.argv = {"sh", "-c", "echo FIRST; head -c 20000000 /dev/zero | tr '\\000' a; echo; echo THE_LAST_WORDS >&2"};
  ExitStatus st = run_to_end(o);
  EXPECT_TRUE(st.exited && st.code == 0) << st.describe();
  drain_log(o.log_path, 2000ms);
  const std::string log = read(o.log_path);
  EXPECT_LE(log.size(), (1u << 20) + 200) << "bounded by the cap (and the line about what was dropped)";
  EXPECT_EQ(log.rfind("FIRST\n", 0), 0u) << log.substr(0, 40);
  EXPECT_NE(log.find("bytes of output dropped here"), std::string::npos);
  const std::string end = "THE_LAST_WORDS\n";
  ASSERT_GE(log.size(), end.size());
  EXPECT_EQ(log.substr(log.size() - end.size()), end) << "the tail, where a traceback is, is kept";
  EXPECT_EQ(tail_file(o.log_path, end.size()), end);
}

TEST_F(Subprocess, ProtocolPipesRoundTrip) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "read x <&3; echo \"got $x\" >&4"};
  std::string error;
  auto child = spawn(o, error);
  ASSERT_TRUE(child.has_value()) << error;
  // The parent's ends do not leak into later children.
  EXPECT_TRUE(::fcntl(child->to_child, F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(child->from_child, F_GETFD) & FD_CLOEXEC);
  const char msg[] = "hello\n";
  ASSERT_EQ(::write(child->to_child, msg, sizeof msg - 1), static_cast<ssize_t>(sizeof msg - 1));
  ::close(child->to_child);
  EXPECT_EQ(read_all(child->from_child), "got hello\n");
  ::close(child->from_child);
  auto status = wait_for(child->pid, 5000ms);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->describe(), "exited with code 0");
}

TEST_F(Subprocess, InheritedDescriptorsAreClosed) {
  int leaked = ::dup2(2, 57);  // no CLOEXEC
  ASSERT_EQ(leaked, 57);
  SpawnOptions o;
  o.log_path = dir_ / "fds.log";
  o.argv = {"sh", "-c",
            "for f in 3 4 5 57; do if [ -e /proc/self/fd/$f ]; then echo open $f; fi; done"};
  run_to_end(o);
  ::close(leaked);
  EXPECT_EQ(read(o.log_path), "open 3\nopen 4\n");

  o.protocol_pipes = false;
  o.log_path = dir_ / "fds2.log";
  run_to_end(o);
  EXPECT_EQ(read(o.log_path), "");
}

TEST_F(Subprocess, ExitCodeAndSignal) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "exit 3"};
  ExitStatus s = run_to_end(o);
  EXPECT_TRUE(s.exited);
  EXPECT_EQ(s.code, 3);
  EXPECT_EQ(s.describe(), "exited with code 3");

  o.argv = {"sh", "-c", "kill -SEGV $$"};
  s = run_to_end(o);
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.signal, SIGSEGV);
  EXPECT_EQ(s.describe(), "killed by signal 11 (SIGSEGV)");
}

// A SIGKILL kbv did not send (the kernel's out-of-memory killer sends one) says the child's peak
// memory, and "killed for memory" when it used half the machine or more (issue 29: a problem
// killed for memory while linted was reported as "worker killed by signal 9").
TEST_F(Subprocess, AKilledChildSaysItsPeakMemory) {
  SpawnOptions o;
  o.argv = {"python3", "-c", "import os, signal; b = bytearray(64 << 20); os.kill(os.getpid(), signal.SIGKILL)"};
  ExitStatus s = run_to_end(o);
  ASSERT_TRUE(s.signaled);
  EXPECT_GE(s.max_rss_bytes, 64ull << 20);
  EXPECT_NE(s.describe().find("killed by signal 9 (SIGKILL) (its peak memory: 0.0"), std::string::npos) << s.describe();

  const uint64_t machine = machine_memory_bytes();
  ASSERT_GT(machine, 0u);
  ExitStatus big;
  big.signaled = true;
  big.signal = SIGKILL;
  big.max_rss_bytes = machine - (machine / 10);
  EXPECT_NE(big.describe().find("most likely killed for memory"), std::string::npos) << big.describe();
  big.signal = SIGSEGV;  // another signal: no guess
  EXPECT_EQ(big.describe(), "killed by signal 11 (SIGSEGV)");
}

TEST_F(Subprocess, TryWaitWhileRunning) {
  SpawnOptions o;
  o.argv = {"sleep", "100"};
  std::string error;
  auto child = spawn(o, error);
  ASSERT_TRUE(child.has_value()) << error;
  EXPECT_FALSE(try_wait(child->pid).has_value());
  EXPECT_EQ(::getpgid(child->pid), child->pid);  // its own process group
  ExitStatus s = kill_group(child->pid);
  EXPECT_EQ(s.describe(), "killed by signal 9 (SIGKILL)");
  ::close(child->to_child);
  ::close(child->from_child);
}

// Field `field` (3: state, 4: ppid, 6: session) of /proc/<pid>/stat; "" when it cannot be read.
std::string stat_field(int pid, int field) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat").text;
  size_t paren = stat.rfind(')');  // comm may hold spaces and parentheses
  if (paren == std::string::npos) return "";
  std::istringstream in(stat.substr(paren + 1));
  std::string v;
  for (int i = 3; i <= field && in >> v; ++i)
    if (i == field) return v;
  return "";
}

int stat_number(int pid, int field) {
  const std::string v = stat_field(pid, field);
  return v.empty() ? -1 : std::stoi(v);
}

// A process is gone once kill(pid, 0) fails; a zombie left to a non-reaping init counts too.
bool gone(int pid) { return ::kill(pid, 0) != 0 || stat_field(pid, 3) == "Z"; }

// Polls gone() every 10 ms for up to 2 s.
bool eventually_gone(int pid) {
  for (int i = 0; i < 200; ++i) {
    if (gone(pid)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Polls for up to 2 s until `pid`'s parent is this process (spawn made it a subreaper).
bool eventually_adopted(int pid) {
  for (int i = 0; i < 200; ++i) {
    if (stat_number(pid, 4) == ::getpid()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Waits up to `within` for a pid written (with a newline) to `file` by a test's shell; 0 if none.
int pid_from(const std::filesystem::path& file, std::chrono::milliseconds within = 5000ms) {
  for (auto waited = 0ms; waited < within; waited += 10ms) {
    std::string text = read_file(file).text;
    if (!text.empty() && text.back() == '\n') return std::stoi(text);
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

TEST_F(Subprocess, TimeoutThenKillGroupTakesGrandchildren) {
  SpawnOptions o;
  auto pid_file = dir_ / "grandchild.pid";
  o.argv = {"sh", "-c", "sleep 100 & echo $! > " + pid_file.string() + "; sleep 100"};
  std::string error;
  auto child = spawn(o, error);
  ASSERT_TRUE(child.has_value()) << error;
  const int grandchild = pid_from(pid_file, 2000ms);
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::kill(grandchild, 0), 0);

  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_for(child->pid, 100ms).has_value());
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 1000ms);

  ExitStatus s = kill_group(child->pid);
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.signal, SIGKILL);
  EXPECT_TRUE(eventually_gone(grandchild));
  ::close(child->to_child);
  ::close(child->from_child);
}

TEST_F(Subprocess, ExecFailureIsReported) {
  SpawnOptions o;
  o.argv = {"kbv-no-such-program-xyz", "--flag"};
  std::string error;
  auto child = spawn(o, error);
  EXPECT_FALSE(child.has_value());
  EXPECT_EQ(error, "cannot run kbv-no-such-program-xyz: No such file or directory");

  o.argv = {"/nonexistent/bin/tool"};
  EXPECT_FALSE(spawn(o, error).has_value());
  EXPECT_EQ(error, "cannot run /nonexistent/bin/tool: No such file or directory");

  o.argv = {};
  EXPECT_FALSE(spawn(o, error).has_value());
  EXPECT_FALSE(error.empty());
}

TEST_F(Subprocess, BadFolderOrLogIsReported) {
  SpawnOptions o;
  o.argv = {"true"};
  o.cwd = dir_ / "missing";
  std::string error;
  EXPECT_FALSE(spawn(o, error).has_value());
  EXPECT_EQ(error, "cannot run true: cannot change to folder " + o.cwd.string() +
                       ": No such file or directory");

  o.cwd.clear();
  o.log_path = dir_ / "missing" / "x.log";
  EXPECT_FALSE(spawn(o, error).has_value());
  EXPECT_NE(error.find(o.log_path.string()), std::string::npos) << error;
}

TEST_F(Subprocess, EnvironmentAndFolder) {
  ASSERT_EQ(::setenv("KBV_TEST_UNSET_ME", "visible", 1), 0);
  ASSERT_EQ(::setenv("KBV_TEST_OVERRIDE", "old", 1), 0);
  SpawnOptions o;
  o.log_path = dir_ / "env.log";
  o.cwd = dir_;
  o.env_set = {{"KBV_TEST_SET", "hello world"}, {"KBV_TEST_OVERRIDE", "new"}};
  o.env_unset = {"KBV_TEST_UNSET_ME"};
  o.argv = {"sh", "-c",
            "echo \"$KBV_TEST_SET|$KBV_TEST_OVERRIDE|${KBV_TEST_UNSET_ME-unset}\"; pwd -P"};
  ExitStatus s = run_to_end(o);
  ::unsetenv("KBV_TEST_UNSET_ME");
  ::unsetenv("KBV_TEST_OVERRIDE");
  EXPECT_EQ(s.code, 0);
  EXPECT_EQ(read(o.log_path),
            "hello world|new|unset\n" + std::filesystem::canonical(dir_).string() + "\n");
}

TEST_F(Subprocess, RunCommandCapturesOutputAndCode) {
  RunResult r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, 5000ms);
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 3);
  EXPECT_EQ(r.output, "out\nerr\n");

  r = run_command({"sh", "-c", "echo $KBV_RUN_VAR"}, {{"KBV_RUN_VAR", "42"}}, 5000ms);
  EXPECT_EQ(r.output, "42\n");
  EXPECT_EQ(r.status.describe(), "exited with code 0");
}

TEST_F(Subprocess, RunCommandTimesOut) {
  auto start = std::chrono::steady_clock::now();
  RunResult r = run_command({"sh", "-c", "echo started; sleep 10"}, {}, 200ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.status.signaled);
  EXPECT_EQ(r.output, "started\n");
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 2000ms);
}

TEST_F(Subprocess, RunCommandDoesNotWaitForBackgroundJobs) {
  auto pid_file = dir_ / "bg.pid";
  auto start = std::chrono::steady_clock::now();
  RunResult r = run_command(
      {"sh", "-c", "sleep 30 & echo $! > " + pid_file.string() + "; echo done"}, {}, 5000ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status.code, 0);
  EXPECT_EQ(r.output, "done\n");
  EXPECT_LT(took, 2000ms);
  // The background job is killed with the command's group.
  int bg = std::stoi(read_file(pid_file).text);
  EXPECT_TRUE(eventually_gone(bg));
}

TEST_F(Subprocess, RunCommandKeepsTheTail) {
  RunResult r = run_command(
      {"sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; echo END"}, {},
      5000ms, 100);
  EXPECT_EQ(r.status.code, 0);
  EXPECT_EQ(r.output.size(), 100u);
  EXPECT_EQ(r.output.substr(r.output.size() - 13), "line2999\nEND\n");
}

TEST_F(Subprocess, RunCommandThatCannotStart) {
  RunResult r = run_command({"kbv-no-such-program-xyz"}, {}, 1000ms);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "cannot run kbv-no-such-program-xyz: No such file or directory");
}

bool reported(const std::vector<Stray>& strays, int pid) {
  return std::any_of(strays.begin(), strays.end(), [&](const Stray& s) { return s.pid == pid; });
}

// A process that left the group with setsid outlives kill_group (the gap kill_strays closes): it
// is adopted by this process (spawn made it a subreaper) and killed with its own child.
TEST_F(Subprocess, KillStraysTakesWhatLeftTheGroup) {
  SpawnOptions o;
  auto stray_file = dir_ / "stray.pid", child_file = dir_ / "child.pid";
  o.argv = {"sh", "-c",
            "setsid sh -c 'sleep 300 & echo $! > " + child_file.string() + "; wait' & echo $! > " +
                stray_file.string() + "; exec sleep 300"};
  std::string error;
  auto worker = spawn(o, error);
  ASSERT_TRUE(worker.has_value()) << error;
  const int stray = pid_from(stray_file), its_child = pid_from(child_file);
  ASSERT_GT(stray, 0);
  ASSERT_GT(its_child, 0);
  EXPECT_EQ(::getsid(stray), stray) << "the stray is in a session of its own";

  kill_group(worker->pid);
  ::close(worker->to_child);
  ::close(worker->from_child);
  EXPECT_FALSE(gone(stray)) << "the group kill does not reach a process that left the group";
  EXPECT_TRUE(eventually_adopted(stray)) << "adopted by this process, not by init; parent " << stat_number(stray, 4);

  std::vector<Stray> strays = kill_strays(worker->pid);
  EXPECT_TRUE(reported(strays, stray)) << strays.size() << " strays reported";
  EXPECT_FALSE(reported(strays, its_child)) << "killed with its parent, not reported apart";
  for (const Stray& s : strays)
    if (s.pid == stray) {
      EXPECT_NE(s.command.find("sleep 300"), std::string::npos) << s.command;
    }
  EXPECT_TRUE(eventually_gone(stray));
  EXPECT_TRUE(eventually_gone(its_child));
}

// An orphan made while its worker still runs (a double fork) is adopted at once; the sweep kills
// it and leaves the children spawn() started alone.
TEST_F(Subprocess, KillStraysLeavesSpawnedChildrenAlone) {
  SpawnOptions o;
  auto orphan_file = dir_ / "orphan.pid";
  o.argv = {"sh", "-c", "(setsid sleep 300 & echo $! > " + orphan_file.string() + "); exec sleep 300"};
  std::string error;
  auto worker = spawn(o, error);
  ASSERT_TRUE(worker.has_value()) << error;
  SpawnOptions plain;
  plain.argv = {"sleep", "300"};
  auto other = spawn(plain, error);
  ASSERT_TRUE(other.has_value()) << error;
  const int orphan = pid_from(orphan_file);
  ASSERT_GT(orphan, 0);
  ASSERT_TRUE(eventually_adopted(orphan)) << "parent " << stat_number(orphan, 4);

  std::vector<Stray> strays = kill_strays(-1);
  EXPECT_TRUE(reported(strays, orphan));
  EXPECT_FALSE(reported(strays, worker->pid));
  EXPECT_FALSE(reported(strays, other->pid));
  EXPECT_TRUE(eventually_gone(orphan));
  EXPECT_FALSE(try_wait(worker->pid).has_value()) << "a spawned child is not a stray";
  EXPECT_FALSE(try_wait(other->pid).has_value()) << "a spawned child is not a stray";
  for (const Child& c : {*worker, *other}) {
    kill_group(c.pid);
    ::close(c.to_child);
    ::close(c.from_child);
  }
}

// A stray that forks as fast as it can: stopped before it is killed, its whole session goes.
TEST_F(Subprocess, KillStraysStopsAForkingStray) {
  SpawnOptions o;
  auto stray_file = dir_ / "stray.pid";
  o.argv = {"sh", "-c",
            "setsid sh -c 'while :; do sleep 300 & done' & echo $! > " + stray_file.string() + "; exec sleep 300"};
  std::string error;
  auto worker = spawn(o, error);
  ASSERT_TRUE(worker.has_value()) << error;
  const int stray = pid_from(stray_file);
  ASSERT_GT(stray, 0);
  std::this_thread::sleep_for(100ms);  // let it make some
  kill_group(worker->pid);
  ::close(worker->to_child);
  ::close(worker->from_child);
  std::vector<Stray> strays = kill_strays(worker->pid);
  EXPECT_TRUE(reported(strays, stray));
  EXPECT_TRUE(eventually_gone(stray));
  // Nothing of its session is left running.
  int left = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const int pid = std::stoi(name);
    if (stat_number(pid, 6) == stray && !gone(pid)) ++left;
  }
  EXPECT_EQ(left, 0) << "processes of the stray's session still running";
}

// Paired timing freezes a live candidate while a baseline is timed: its group, a child that left
// the group (setsid) and an orphan adopted by this process all stop, use no CPU until continued,
// and run again after; children spawn() started for others are left alone.
TEST_F(Subprocess, StopProcessesFreezesTheGroupItsDescendantsAndStrays) {
  SpawnOptions o;
  auto member_file = dir_ / "member.pid", left_file = dir_ / "left.pid", orphan_file = dir_ / "orphan.pid";
  const std::string spin = "sh -c 'while :; do :; done'";
  o.argv = {"sh", "-c",
            spin + " & echo $! > " + member_file.string() + "; setsid " + spin + " & echo $! > " + left_file.string() +
                "; (setsid " + spin + " & echo $! > " + orphan_file.string() + "); exec sleep 300"};
  std::string error;
  auto worker = spawn(o, error);
  ASSERT_TRUE(worker.has_value()) << error;
  SpawnOptions plain;
  plain.argv = {"sleep", "300"};
  auto other = spawn(plain, error);
  ASSERT_TRUE(other.has_value()) << error;
  const int member = pid_from(member_file), left = pid_from(left_file), orphan = pid_from(orphan_file);
  ASSERT_GT(member, 0);
  ASSERT_GT(left, 0);
  ASSERT_GT(orphan, 0);
  ASSERT_TRUE(eventually_adopted(orphan)) << "parent " << stat_number(orphan, 4);
  // `$!` is written before the background child has run setsid(): wait for it to leave.
  for (int i = 0; i < 200 && stat_number(left, 5) == worker->pid; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_NE(stat_number(left, 5), worker->pid) << "the setsid child left the worker's group";

  const std::vector<int> stopped = stop_processes(worker->pid, "");
  auto has = [&](int pid) { return std::find(stopped.begin(), stopped.end(), pid) != stopped.end(); };
  auto eventually_state = [&](int pid, bool want_stopped) {
    for (int i = 0; i < 200; ++i) {
      if ((process_state(pid) == 'T') == want_stopped) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  for (int pid : {worker->pid, member, left, orphan}) {
    EXPECT_TRUE(has(pid)) << pid << " was not stopped";
    EXPECT_TRUE(eventually_state(pid, true)) << pid << " state " << process_state(pid);
  }
  EXPECT_FALSE(has(other->pid)) << "a child spawn() started is not the worker's";
  EXPECT_NE(process_state(other->pid), 'T');
  const int cpu_before = stat_number(member, 14) + stat_number(left, 14) + stat_number(orphan, 14);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(stat_number(member, 14) + stat_number(left, 14) + stat_number(orphan, 14), cpu_before)
      << "a stopped process used CPU time";

  continue_processes(stopped, worker->pid);
  for (int pid : {member, left, orphan}) EXPECT_TRUE(eventually_state(pid, false)) << pid;
  bool ran = false;
  for (int i = 0; i < 300 && !ran; ++i) {
    std::this_thread::sleep_for(10ms);
    ran = stat_number(member, 14) + stat_number(left, 14) + stat_number(orphan, 14) > cpu_before;
  }
  EXPECT_TRUE(ran) << "continued processes run again";

  for (const Child& c : {*worker, *other}) {
    kill_group(c.pid);
    ::close(c.to_child);
    ::close(c.from_child);
  }
  for (int pid : {left, orphan}) ::kill(pid, SIGKILL);
  kill_strays(worker->pid);
  for (int pid : {member, left, orphan}) EXPECT_TRUE(eventually_gone(pid)) << pid;
}

// kbv's own builds are stopped while it times on the CPU (util/pause.h): a registered build with
// a compiler in a process group of its own (as ninja starts one) stops with everything under it
// while a hold lives, one registered during a hold stops at once, holds nest, and every process
// runs again once the last hold ends or its registration does. Other children of kbv are left alone.
TEST_F(Subprocess, APauseHoldStopsRegisteredBuildsWithTheirCompilersAndNothingElse) {
  const std::string spin = "sh -c 'while :; do :; done'";
  auto start_build = [&](const std::string& name, int& compiler) {
    SpawnOptions o;
    const auto file = dir_ / (name + ".pid");
    o.argv = {"sh", "-c", "setsid " + spin + " & echo $! > " + file.string() + "; exec sleep 300"};
    std::string error;
    auto child = spawn(o, error);
    EXPECT_TRUE(child.has_value()) << error;
    compiler = child ? pid_from(file) : -1;
    return child;
  };
  auto eventually_state = [&](int pid, bool want_stopped) {
    for (int i = 0; i < 200; ++i) {
      if ((process_state(pid) == 'T') == want_stopped) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  int first_cc = -1, second_cc = -1;
  auto first = start_build("first", first_cc);
  auto second = start_build("second", second_cc);
  ASSERT_TRUE(first && second);
  ASSERT_GT(first_cc, 0);
  ASSERT_GT(second_cc, 0);
  SpawnOptions plain;
  plain.argv = {"sleep", "300"};
  std::string error;
  auto other = spawn(plain, error);  // spawn()'s, not registered: never stopped
  ASSERT_TRUE(other.has_value()) << error;

  {
    PausableProcess registered(first->pid);
    EXPECT_NE(process_state(first_cc), 'T') << "no hold, nothing stopped";
    std::optional<PausableProcess> late;
    {
      PauseHold hold;
      for (int pid : {first->pid, first_cc}) EXPECT_TRUE(eventually_state(pid, true)) << pid;
      EXPECT_EQ(hold.stopped(), 1);
      late.emplace(second->pid);  // registered while a hold lives: stopped at once
      EXPECT_TRUE(eventually_state(second_cc, true));
      EXPECT_EQ(hold.stopped(), 2);
      EXPECT_NE(process_state(other->pid), 'T') << "an unregistered child of kbv is not a build";
      {
        PauseHold nested;
        EXPECT_EQ(nested.stopped(), 0) << "nothing new was stopped";
      }
      EXPECT_TRUE(eventually_state(first_cc, true)) << "still held by the outer hold";
      const int cpu = stat_number(first_cc, 14) + stat_number(second_cc, 14);
      std::this_thread::sleep_for(200ms);
      EXPECT_EQ(stat_number(first_cc, 14) + stat_number(second_cc, 14), cpu) << "a stopped compiler used CPU";
    }
    for (int pid : {first->pid, first_cc, second_cc}) EXPECT_TRUE(eventually_state(pid, false)) << pid;
    PauseHold again;
    EXPECT_TRUE(eventually_state(second_cc, true));
    late.reset();  // its registration ended during a hold: continued first
    EXPECT_TRUE(eventually_state(second_cc, false));
    EXPECT_TRUE(eventually_state(first_cc, true));
  }
  EXPECT_TRUE(eventually_state(first_cc, false)) << "the registration ended: continued";

  for (const Child& c : {*first, *second, *other}) {
    kill_group(c.pid);
    ::close(c.to_child);
    ::close(c.from_child);
  }
  for (int pid : {first_cc, second_cc}) ::kill(pid, SIGKILL);
  kill_strays(first->pid);
  for (int pid : {first_cc, second_cc}) EXPECT_TRUE(eventually_gone(pid)) << pid;
}

TEST(ExitStatusDescribe, Words) {
  ExitStatus s;
  s.signaled = true;
  s.signal = SIGABRT;
  EXPECT_EQ(s.describe(), "killed by signal 6 (SIGABRT)");
  s.signal = 64;
  EXPECT_EQ(s.describe(), "killed by signal 64");
}

}  // namespace subprocess_test
}  // namespace kbv
