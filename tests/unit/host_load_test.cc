#include "util/host_load.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "util/fs.h"

namespace kbv {
namespace host_load_test {

TEST(HostLoad, ProcStatBusyCountsUserNiceSystemIrqSoftirqSteal) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const char* stat = "cpu  100 20 30 5000 400 6 7 8 50 0\ncpu0 50 10 15 2500 200 3 3 4 25 0\nintr 1 2 3\n";
  std::optional<double> s = proc_stat_busy_s(stat, 100.0);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(*s, (100 + 20 + 30 + 6 + 7 + 8) / 100.0) << "idle and iowait are not busy; guest is inside user";
  EXPECT_FALSE(proc_stat_busy_s("cpu0 1 2 3 4 5 6 7 8\n", 100.0)) << "only the all-CPU line";
  EXPECT_FALSE(proc_stat_busy_s("cpu  1 2 3\n", 100.0)) << "too few fields";
  EXPECT_FALSE(proc_stat_busy_s("", 100.0));
}

TEST(HostLoad, PidStatCpuReadsUtimeAndStimeAfterTheCommand) {
  // A command with spaces and parentheses: fields are counted from the last ')'.
  const char* stat = "4242 (kbv (worker) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 566 7 8 20 0 3 0 100 "
                     "1000000 500 18446744073709551615\n";
  std::optional<double> s = pid_stat_cpu_s(stat, 100.0);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(*s, (1234 + 566) / 100.0) << "utime + stime, not the children's cutime/cstime";
  EXPECT_FALSE(pid_stat_cpu_s("4242 kbv S 1", 100.0));
  EXPECT_FALSE(pid_stat_cpu_s("4242 (kbv) S 1 2 3", 100.0));
}

TEST(HostLoad, SchedstatWaitIsTheSecondField) {
  std::optional<double> w = schedstat_wait_ms("96695223 10736155 292\n");
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(*w, 10.736155) << "nanoseconds on a run queue, in ms; not the on-CPU time";
  EXPECT_FALSE(schedstat_wait_ms("96695223\n"));
  EXPECT_FALSE(schedstat_wait_ms(""));
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::optional<double> cpu_s_of(pid_t pid) {
  FileText t = read_file("/proc/" + std::to_string(pid) + "/stat");
  return t.ok ? pid_stat_cpu_s(t.text, static_cast<double>(sysconf(_SC_CLK_TCK))) : std::nullopt;
}

bool stop_and_wait(pid_t child) {
  int status = 0;
  return kill(child, SIGSTOP) == 0 && waitpid(child, &status, WUNTRACED) == child && WIFSTOPPED(status);
}

// A child process that spins (and dies with this one), killed and reaped however the test
// ends. pid < 0: fork failed.
struct SpinningChild {
  pid_t pid = fork();
  SpinningChild() {
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      volatile unsigned long k = 0;
      for (;;) k = k + 1;
    }
  }
  ~SpinningChild() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  SpinningChild(const SpinningChild&) = delete;
  SpinningChild& operator=(const SpinningChild&) = delete;
};

TEST(HostLoad, OurProcessesAreNotOthers) {
  // A child that spins: counted as ours by one probe and as another process by a second probe
  // over the same interval. Whatever else the machine runs meanwhile (ctest -j2) is the same for
  // both, so their difference is the child's own CPU: read from its /proc/<pid>/stat, with the
  // child stopped while the probes start and are read. It runs until it used kChildCpuS of CPU,
  // however long that takes on a loaded machine, and the figures are compared in CPU seconds, so
  // the load changes how long the test takes, not what it finds.
  constexpr double kChildCpuS = 0.3;
  SpinningChild spinner;
  ASSERT_GE(spinner.pid, 0);
  const pid_t child = spinner.pid;
  ASSERT_TRUE(stop_and_wait(child));
  bool compared = false;
  // The two probes start (and are read) one after the other; a try where this process was
  // descheduled between them gives them different intervals, and is tried again.
  for (int attempt = 0; attempt < 10 && !compared; ++attempt) {
    const std::optional<double> c0 = cpu_s_of(child);
    ASSERT_TRUE(c0.has_value()) << "/proc is readable on Linux";
    const double t0 = now_s();
    HostLoadProbe with_child({child}), without_child({});
    const double t1 = now_s();
    ASSERT_EQ(kill(child, SIGCONT), 0);
    std::optional<double> c1 = c0;
    for (const double deadline = now_s() + 300; c1 && *c1 - *c0 < kChildCpuS && now_s() < deadline;
         c1 = cpu_s_of(child))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(stop_and_wait(child));
    c1 = cpu_s_of(child);
    ASSERT_TRUE(c1.has_value());
    ASSERT_GE(*c1 - *c0, kChildCpuS) << "the child got no CPU for 300 s";
    const double t2 = now_s();
    std::optional<double> a = with_child.other_cores(), b = without_child.other_cores();
    const double t3 = now_s();
    ASSERT_TRUE(a.has_value() && b.has_value()) << "/proc is readable on Linux";
    if (t1 - t0 > 0.002 || t3 - t2 > 0.002) continue;
    compared = true;
    const double wall = t3 - t0, child_s = *c1 - *c0;
    EXPECT_GE(*a, 0.0);
    // Ticks of other processes that fall between the two probes' reads, and /proc/stat's sampled
    // busy time against the child's own count: a few hundredths of a second.
    EXPECT_NEAR((*b - *a) * wall, child_s, 0.05 + 0.1 * child_s)
        << "the spinning child (ours in the first probe) must show as others' in the second, as much as it ran: "
        << *a << " vs " << *b << " cores over " << wall << " s; the child ran " << child_s << " s";
    EXPECT_LE(*b - *a, 1.2) << "one process spins at most one core";
  }
  EXPECT_TRUE(compared) << "this process was descheduled between the two probes in every try";
}

TEST(HostLoad, AProcessGoneMakesTheFigureUnknown) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  HostLoadProbe probe({child});
  EXPECT_FALSE(probe.other_cores().has_value());
}

// The kernel's account of a thread's waits for a CPU (what the per-call bound reads around every
// timed call): a thread that shares its one CPU with a spinning child waits while the child runs,
// and the child's own figure, read from outside by its pid, grows as well.
TEST(HostLoad, AThreadSharingItsCpuWaits) {
  ThreadWait self(0);
  if (!self.ms()) GTEST_SKIP() << "no /proc/thread-self/schedstat on this kernel: waits are not known here";
  std::thread t([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    SpinningChild spinner;  // inherits the one CPU
    ASSERT_GE(spinner.pid, 0);
    ThreadWait mine(0), its(spinner.pid);
    const std::optional<double> mine0 = mine.ms();
    ASSERT_TRUE(mine0.has_value());
    // Spin for 200 ms of wall time on the shared CPU: the scheduler gives the child part of it.
    const double t0 = now_s();
    volatile unsigned long k = 0;
    while (now_s() - t0 < 0.2) k = k + 1;
    const std::optional<double> mine1 = mine.ms(), theirs = its.ms();
    ASSERT_TRUE(mine1.has_value());
    ASSERT_TRUE(theirs.has_value()) << "the child's schedstat by its pid";
    EXPECT_GT(*mine1 - *mine0, 10.0) << "200 ms beside a spinning child on one CPU, yet waited only "
                                     << *mine1 - *mine0 << " ms";
    EXPECT_LT(*mine1 - *mine0, 200.0);
    EXPECT_GT(*theirs, 0.0);
  });
  t.join();
  ThreadWait gone(999999999), not_running(-1);
  EXPECT_FALSE(gone.ms().has_value()) << "no such process";
  EXPECT_FALSE(not_running.ms().has_value()) << "a worker's pid of -1 is not the calling thread";
}

// The process CPU clock the per-call CPU bound reads: a spinning child's grows with the CPU it gets
// (however busy the machine: it is compared with the child's own /proc figure, not with the wall
// clock), a stopped child's stands still, and it is read to well under a scheduler tick.
TEST(HostLoad, AProcessCpuClockCountsItsCpuTimeFromOutside) {
  SpinningChild spinner;
  ASSERT_GE(spinner.pid, 0);
  ProcessCpuTime clock(spinner.pid);
  const std::optional<double> a = clock.ms();
  ASSERT_TRUE(a.has_value()) << "clock_getcpuclockid of a child";
  std::optional<double> b = a;
  for (const double deadline = now_s() + 300; b && *b - *a < 100.0 && now_s() < deadline; b = clock.ms())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(*b - *a, 100.0) << "the child got no CPU for 300 s";
  ASSERT_TRUE(stop_and_wait(spinner.pid));
  // The stop is reported before the child has finished leaving the CPU (it notifies its parent,
  // then schedules out): its clock may still move by microseconds. Read it once that is over.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::optional<double> c = clock.ms(), proc = cpu_s_of(spinner.pid);
  ASSERT_TRUE(c.has_value() && proc.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::optional<double> later = clock.ms();
  ASSERT_TRUE(later.has_value());
  // A running child would have added up to 50 ms.
  EXPECT_NEAR(*later, *c, 0.5) << "a stopped process uses no CPU";
  // /proc/<pid>/stat counts in ticks (10 ms), the clock in nanoseconds: they agree to a few ticks.
  EXPECT_NEAR(*c / 1000.0, *proc, 0.05);
  ProcessCpuTime none(-1), gone(999999999);
  EXPECT_FALSE(none.ms().has_value()) << "a worker's pid of -1 is not this process";
  EXPECT_FALSE(gone.ms().has_value()) << "no such process";
}

TEST(HostLoad, PidStatFieldsAreReadPastTheCommandName) {
  // comm may hold spaces and parentheses: the fields are counted from the last ')'.
  const std::string line =
      "4242 (a) b (c) S 1 4240 4239 0 -1 4194560 100 0 0 0 250 50 30 -5 20 0 3 0 123 456 789\n";
  std::optional<PidStat> p = parse_pid_stat(line, 100.0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pgrp, 4240);
  EXPECT_EQ(p->session, 4239);
  EXPECT_DOUBLE_EQ(p->cpu_s, 3.0);             // utime 250 + stime 50 ticks
  EXPECT_DOUBLE_EQ(p->children_cpu_s, 0.25);   // cutime 30 + cstime -5
  EXPECT_FALSE(parse_pid_stat("4242 (no end", 100.0).has_value());
  EXPECT_FALSE(parse_pid_stat("4242 (x) S 1 2", 100.0).has_value());
}

// A worker in its own process group whose helper process spins for `helper_cpu_s` of CPU, exits
// and is waited for; the worker then sleeps. Both die with this process. `own_session`: the helper
// calls setsid first (out of the worker's group), and stays alive after spinning (never reaped).
struct WorkerWithHelper {
  pid_t pid = -1;
  explicit WorkerWithHelper(double helper_cpu_s, bool own_session = false) {
    pid = fork();
    if (pid > 0) setpgid(pid, pid);  // in both processes: no read sees it in this process's group
    if (pid != 0) return;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
    const pid_t h = fork();
    if (h == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (own_session) setsid();
      timespec ts{};
      do {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      } while (static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9 < helper_cpu_s);
      if (own_session)
        for (;;) pause();
      _exit(0);
    }
    if (h > 0 && !own_session) waitpid(h, nullptr, 0);
    for (;;) pause();
  }
  ~WorkerWithHelper() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  WorkerWithHelper(const WorkerWithHelper&) = delete;
  WorkerWithHelper& operator=(const WorkerWithHelper&) = delete;
};

TEST(HostLoad, AHelperProcessOfAWorkerIsCountedBesideIt) {
  // The helper spins 0.3 s of CPU and is reaped by the worker: its time reaches the count through
  // the worker's children's time. A process spinning meanwhile in this process's group is not the
  // worker's and is not counted.
  SpinningChild outsider;
  ASSERT_GE(outsider.pid, 0);
  WorkerWithHelper worker(0.3);
  ASSERT_GT(worker.pid, 0);
  BesideCpu beside(worker.pid);
  ASSERT_TRUE(beside.ms().has_value());
  double reaped = 0;
  for (const double deadline = now_s() + 300; reaped < 0.25 && now_s() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    FileText t = read_file("/proc/" + std::to_string(worker.pid) + "/stat");
    if (std::optional<PidStat> p = t.ok ? parse_pid_stat(t.text, static_cast<double>(sysconf(_SC_CLK_TCK))) : std::nullopt)
      reaped = p->children_cpu_s;
  }
  ASSERT_GE(reaped, 0.25) << "the helper got no CPU for 300 s";
  const std::optional<double> used = beside.ms();
  ASSERT_TRUE(used.has_value());
  // What the helper used before `beside` was made is not counted; /proc counts in 10 ms ticks.
  EXPECT_GE(*used, 150.0);
  EXPECT_LE(*used, 350.0) << "the outsider, spinning all along, would add as much again";
  EXPECT_FALSE(BesideCpu(-1).ms().has_value());
  EXPECT_FALSE(BesideCpu(999999999).ms().has_value()) << "no such process";
}

// T22 without a PID namespace (--sandbox off): a helper that called setsid left the worker's
// process group and stays alive; it is the worker's child, and is counted as such.
TEST(HostLoad, ASetsidHelperOfAWorkerIsCountedBesideIt) {
  WorkerWithHelper worker(0.3, /*own_session=*/true);
  ASSERT_GT(worker.pid, 0);
  BesideCpu beside(worker.pid);
  ASSERT_TRUE(beside.ms().has_value());
  // Until the helper has spun its share and sleeps in pause().
  const std::string children = "/proc/" + std::to_string(worker.pid) + "/task/" + std::to_string(worker.pid) + "/children";
  auto helper_sleeps = [&] {
    const int helper = std::atoi(read_file(children).text.c_str());
    FileText t = helper > 0 ? read_file("/proc/" + std::to_string(helper) + "/stat") : FileText{};
    const size_t close = t.ok ? t.text.rfind(')') : std::string::npos;
    return close != std::string::npos && t.text.compare(close, 3, ") S") == 0;
  };
  for (const double deadline = now_s() + 300; !helper_sleeps() && now_s() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(helper_sleeps()) << "the helper got no CPU for 300 s";
  const std::optional<double> used = beside.ms();
  ASSERT_TRUE(used.has_value());
  // What the helper used before `beside` was made is not counted (it started spinning at fork).
  EXPECT_GE(*used, 150.0) << "the setsid helper's CPU was not counted";
  EXPECT_LE(*used, 350.0);
}

TEST(HostLoad, ThresholdComesFromTheEnvironmentWhenSet) {
  unsetenv("KBV_HOST_BUSY_CORES");
  EXPECT_DOUBLE_EQ(host_busy_cores(), kHostBusyCores);
  setenv("KBV_HOST_BUSY_CORES", "3.5", 1);
  EXPECT_DOUBLE_EQ(host_busy_cores(), 3.5);
  setenv("KBV_HOST_BUSY_CORES", "nonsense", 1);
  EXPECT_DOUBLE_EQ(host_busy_cores(), kHostBusyCores);
  unsetenv("KBV_HOST_BUSY_CORES");
}

}  // namespace host_load_test
}  // namespace kbv
