#include "util/host_load.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

namespace kbv {
namespace {

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

TEST(HostLoad, OurProcessesAreNotOthers) {
  // A child that spins: counted as ours by one probe and as another process by a second probe
  // over the same interval. Whatever else the machine runs meanwhile (ctest -j2) is the same for
  // both, so their difference is the child's own CPU.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    volatile unsigned long k = 0;
    for (;;) k = k + 1;
  }
  HostLoadProbe with_child({child}), without_child({});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::optional<double> a = with_child.other_cores(), b = without_child.other_cores();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(a.has_value() && b.has_value()) << "/proc is readable on Linux";
  EXPECT_GE(*a, 0.0);
  EXPECT_GE(*b - *a, 0.2) << "the spinning child (ours in the first probe) must show as others' in the second: "
                          << *a << " vs " << *b;
  EXPECT_LE(*b - *a, 1.2) << "one process spins at most one core";
}

TEST(HostLoad, AProcessGoneMakesTheFigureUnknown) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  HostLoadProbe probe({child});
  EXPECT_FALSE(probe.other_cores().has_value());
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

}  // namespace
}  // namespace kbv
