// util/sched.h: a process whose threads were pinned, reniced or moved to another policy is found
// and set back (T21), and an untouched one is left alone.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "util/sched.h"

namespace {

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

}  // namespace
