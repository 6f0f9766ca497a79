// util/sched.h: a process whose threads were pinned, reniced or moved to another policy is found
// and set back (T21), and an untouched one is left alone.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

#include "util/sched.h"

namespace sched_test {

struct Sleeper {
  pid_t pid = -1;
  Sleeper() {
    pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Sleeper() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

bool contains(const std::vector<kbv::SchedulingDrift>& drift, const std::string& prefix) {
  for (const auto& d : drift)
    if (d.what.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(Sched, AnUntouchedProcessIsLeftAlone) {
  Sleeper s;
  ASSERT_GT(s.pid, 0);
  EXPECT_TRUE(kbv::restore_scheduling(s.pid).empty());
}

TEST(Sched, PinnedRenicedAndIdledThreadsAreFoundAndSetBack) {
  Sleeper s;
  ASSERT_GT(s.pid, 0);
  cpu_set_t own;
  CPU_ZERO(&own);
  ASSERT_EQ(::sched_getaffinity(0, sizeof own, &own), 0);
  const bool can_pin = CPU_COUNT(&own) > 1;
  if (can_pin) {
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &own)) {
        CPU_SET(c, &one);
        break;
      }
    ASSERT_EQ(::sched_setaffinity(s.pid, sizeof one, &one), 0);
  }
  const int own_nice = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(::setpriority(PRIO_PROCESS, static_cast<id_t>(s.pid), std::min(own_nice + 5, 19)), 0);
  sched_param p{};
  ASSERT_EQ(::sched_setscheduler(s.pid, SCHED_IDLE, &p), 0);

  std::vector<kbv::SchedulingDrift> drift = kbv::restore_scheduling(s.pid);
  EXPECT_EQ(contains(drift, "affinity "), can_pin);
  EXPECT_TRUE(contains(drift, "nice "));
  EXPECT_TRUE(contains(drift, "policy SCHED_IDLE"));
  for (const auto& d : drift) {
    EXPECT_EQ(d.tid, s.pid);
    // Raising a nice value back needs CAP_SYS_NICE; as root (CI) everything is set back.
    if (::geteuid() == 0) {
      EXPECT_TRUE(d.restored) << d.what << ": " << d.error;
    }
  }
  if (::geteuid() == 0) {
    EXPECT_TRUE(kbv::restore_scheduling(s.pid).empty()) << "set back: nothing differs any more";
  }
}

// The CPU thread budget (docs/TIMING.md "Thread parity"): the highest-numbered CPUs kbv may use,
// as many as asked; 0 or more than there are: all of them.
TEST(Sched, TheBudgetTakesTheLastCpusOfTheAllowedSet) {
  const std::vector<int> allowed = {0, 1, 2, 3, 6, 7};
  kbv::CpuBudget one = kbv::pick_cpu_budget(allowed, 1);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(one.cpus, std::vector<int>({7}));
  kbv::CpuBudget three = kbv::pick_cpu_budget(allowed, 3);
  EXPECT_EQ(three.threads, 3);
  EXPECT_EQ(three.cpus, std::vector<int>({3, 6, 7}));
  EXPECT_EQ(kbv::cpu_list_text(three.cpus), "3,6-7");
  kbv::CpuBudget all = kbv::pick_cpu_budget(allowed, 0);
  EXPECT_EQ(all.threads, 6);
  EXPECT_EQ(all.cpus, allowed);
  kbv::CpuBudget more = kbv::pick_cpu_budget(allowed, 64);
  EXPECT_EQ(more.threads, 6) << "no more threads than CPUs to run them";
  EXPECT_EQ(more.cpus, allowed);
  EXPECT_EQ(kbv::pick_cpu_budget({}, 1).threads, 0);
}

TEST(Sched, OwnBudgetIsInsideOwnAffinity) {
  const std::vector<int> own = kbv::affinity_of(0);
  ASSERT_FALSE(own.empty());
  kbv::CpuBudget b = kbv::cpu_budget(1);
  ASSERT_EQ(b.cpus.size(), 1u);
  EXPECT_EQ(b.cpus[0], own.back());
  EXPECT_EQ(kbv::cpu_budget(0).cpus, own);
}

// A process group pinned from outside: every thread of every member gets the budget's CPUs, and a
// thread that widens its own affinity afterwards is found (T25).
TEST(Sched, AGroupIsPinnedAndAWidenedThreadIsFound) {
  const std::vector<int> own = kbv::affinity_of(0);
  if (own.size() < 2) GTEST_SKIP() << "needs two CPUs to widen anything";
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setpgid(0, 0);
    pid_t second = ::fork();  // a second member of the group (the sandbox's relay, init and worker)
    if (second == 0) {
      ::pause();
      ::_exit(0);
    }
    ::close(ready[0]);
    ::close(go[1]);
    char c = 0;
    if (::write(ready[1], "r", 1) != 1) ::_exit(2);
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    // Told to: widen its own affinity to every CPU it may have.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu : own) CPU_SET(cpu, &all);
    const bool widened = ::sched_setaffinity(0, sizeof all, &all) == 0;
    if (::write(ready[1], widened ? "w" : "n", 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(leader, 0);
  ::setpgid(leader, leader);  // either side may set it first
  ::close(ready[1]);
  ::close(go[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::vector<int> budget = {own.back()};
  const std::vector<int> members = kbv::group_members(leader);
  EXPECT_EQ(members.size(), 2u) << "the leader and its child";
  EXPECT_EQ(kbv::pin_group(leader, budget), "");
  for (int pid : members) EXPECT_EQ(kbv::affinity_of(pid), budget) << "pid " << pid;
  EXPECT_TRUE(kbv::affinity_outside(leader, budget).empty());
  EXPECT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, 'w');
  const std::vector<kbv::SchedulingDrift> wide = kbv::affinity_outside(leader, budget);
  ASSERT_EQ(wide.size(), 1u);
  EXPECT_EQ(wide[0].tid, leader);
  EXPECT_EQ(wide[0].what.rfind("affinity " + kbv::cpu_list_text(own) + " (budget ", 0), 0u) << wide[0].what;
  // A worker kbv pinned is expected on its budget (T21's check), not on kbv's own set.
  ASSERT_EQ(members.size(), 2u);
  const int child = members[0] == leader ? members[1] : members[0];
  EXPECT_TRUE(kbv::restore_scheduling(child, &budget).empty());
  EXPECT_FALSE(kbv::restore_scheduling(child).empty()) << "against kbv's own set it differs";
  ::kill(-leader, SIGKILL);
  ::waitpid(leader, nullptr, 0);
  ::close(ready[0]);
  ::close(go[1]);
}

// Evaluations running at once take different CPUs (ctest -j2 pinned both tests' workers to the
// same last CPU, and each timed the other: the per-call bound called honest calls forged).
TEST(Sched, LeasesTakeFreeCpusFirstAndShareOnlyWhenNoneIsLeft) {
  const std::vector<int> allowed = kbv::affinity_of(0);
  ASSERT_FALSE(allowed.empty());
  const std::string dir = ::testing::TempDir() + "/kbv-cpu-locks-test-" + std::to_string(::getpid());
  std::optional<kbv::CpuLease> a(std::in_place, 1, dir);
  ASSERT_EQ(a->budget().cpus, std::vector<int>{allowed.back()});
  EXPECT_EQ(a->shared(), 0);
  if (allowed.size() >= 2) {
    kbv::CpuLease b(1, dir);
    EXPECT_EQ(b.budget().cpus, std::vector<int>{allowed[allowed.size() - 2]}) << "the next free CPU";
    EXPECT_EQ(b.shared(), 0);
  }
  {
    kbv::CpuLease all(0, dir);  // every CPU: the one `a` holds is shared
    EXPECT_EQ(all.budget().cpus, allowed);
    EXPECT_EQ(all.shared(), 1);
  }
  a.reset();  // released: the highest CPU is free again
  kbv::CpuLease c(1, dir);
  EXPECT_EQ(c.budget().cpus, std::vector<int>{allowed.back()});
  EXPECT_EQ(c.shared(), 0);
  std::filesystem::remove_all(dir);
}

// The CPUs the reference may draw on while the candidate is timed: none another evaluation holds.
// Any CPU numbers do: only the lock files are read.
TEST(Sched, UnleasedCpusAreThoseWhoseLockNobodyHolds) {
  const std::string dir = ::testing::TempDir() + "/kbv-cpu-unleased-test-" + std::to_string(::getpid());
  const std::vector<int> allowed = kbv::affinity_of(0);
  ASSERT_FALSE(allowed.empty());
  {
    kbv::CpuLease held(1, dir);  // the highest allowed CPU, its lock held
    ASSERT_EQ(held.budget().cpus, std::vector<int>{allowed.back()});
    {
      kbv::CpuLease released(1, dir);  // its lock file stays, unheld, once this goes
    }
    const int never = allowed.back() + 1000;  // no lock file at all
    std::vector<int> asked = {allowed.back(), never};
    if (allowed.size() >= 2) asked.push_back(allowed[allowed.size() - 2]);
    std::vector<int> expected = {never};
    if (allowed.size() >= 2) expected.push_back(allowed[allowed.size() - 2]);
    EXPECT_EQ(kbv::unleased_cpus(asked, dir), expected);
  }
  EXPECT_EQ(kbv::unleased_cpus({allowed.back()}, dir), std::vector<int>{allowed.back()}) << "released";
  std::filesystem::remove_all(dir);
}

TEST(Sched, ProcLocksFlockLinesAreRead) {
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 100 00:2f:5001 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 4243 08:01:1234567 0 EOF\n"
      "3: OFDLCK ADVISORY  READ  -1 00:05:77 0 EOF\n"
      "4: FLOCK  ADVISORY  WRITE 9 fd:00:bad 0 EOF\n"
      "garbage\n";
  const auto got = kbv::flocked_files(text);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "08:01");
  EXPECT_EQ(got[0].second, 1234567u);
}

}  // namespace sched_test
