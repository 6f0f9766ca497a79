#include "util/sched.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kbv {
namespace {

std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int end = c;
    while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) ++end;
    out += (out.empty() ? "" : ",") + std::to_string(c) + (end > c ? "-" + std::to_string(end) : "");
    c = end;
  }
  return out.empty() ? "none" : out;
}

const char* policy_name(int policy) {
  switch (policy & ~SCHED_RESET_ON_FORK) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
    default: return "another policy";
  }
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::vector<SchedulingDrift> restore_scheduling(int pid) {
  std::vector<SchedulingDrift> drift;
  cpu_set_t own_mask;
  CPU_ZERO(&own_mask);
  if (::sched_getaffinity(0, sizeof own_mask, &own_mask) != 0) return drift;
  errno = 0;
  const int own_nice = ::getpriority(PRIO_PROCESS, 0);
  const int own_policy = ::sched_getscheduler(0);
  sched_param own_param{};
  ::sched_getparam(0, &own_param);

  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const int tid = std::atoi(task.path().filename().c_str());
    if (tid <= 0) continue;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (::sched_getaffinity(tid, sizeof mask, &mask) == 0 && !CPU_EQUAL(&mask, &own_mask)) {
      SchedulingDrift d{tid, "affinity " + cpu_list(mask) + " (expected " + cpu_list(own_mask) + ")", false, ""};
      d.restored = ::sched_setaffinity(tid, sizeof own_mask, &own_mask) == 0;
      if (!d.restored) d.error = "sched_setaffinity: " + errno_text();
      drift.push_back(d);
    }
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno == 0 && nice != own_nice) {
      SchedulingDrift d{tid, "nice " + std::to_string(nice) + " (expected " + std::to_string(own_nice) + ")", false, ""};
      d.restored = ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), own_nice) == 0;
      if (!d.restored) d.error = "setpriority: " + errno_text();
      drift.push_back(d);
    }
    const int policy = ::sched_getscheduler(tid);
    if (policy >= 0 && own_policy >= 0 && (policy & ~SCHED_RESET_ON_FORK) != (own_policy & ~SCHED_RESET_ON_FORK)) {
      SchedulingDrift d{tid, std::string("policy ") + policy_name(policy) + " (expected " + policy_name(own_policy) + ")",
                        false, ""};
      d.restored = ::sched_setscheduler(tid, own_policy, &own_param) == 0;
      if (!d.restored) d.error = "sched_setscheduler: " + errno_text();
      drift.push_back(d);
    }
  }
  return drift;
}

}  // namespace kbv
