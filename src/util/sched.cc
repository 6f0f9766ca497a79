#include "util/sched.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/fs.h"

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

cpu_set_t mask_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return set;
}

std::vector<int> cpus_of(const cpu_set_t& set) {
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> tids_of(int pid) {
  std::vector<int> tids;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    if (const int tid = std::atoi(task.path().filename().c_str()); tid > 0) tids.push_back(tid);
  return tids;
}

}  // namespace

std::vector<SchedulingDrift> restore_scheduling(int pid, const std::vector<int>* expected_cpus) {
  std::vector<SchedulingDrift> drift;
  cpu_set_t own_mask;
  CPU_ZERO(&own_mask);
  if (::sched_getaffinity(0, sizeof own_mask, &own_mask) != 0) return drift;
  if (expected_cpus && !expected_cpus->empty()) own_mask = mask_of(*expected_cpus);
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

CpuBudget pick_cpu_budget(const std::vector<int>& allowed, int threads) {
  CpuBudget b;
  const size_t n = threads <= 0 || static_cast<size_t>(threads) >= allowed.size() ? allowed.size()
                                                                                  : static_cast<size_t>(threads);
  b.cpus.assign(allowed.end() - static_cast<long>(n), allowed.end());
  b.threads = static_cast<int>(n);
  return b;
}

CpuBudget cpu_budget(int threads) { return pick_cpu_budget(affinity_of(0), threads); }

std::string CpuLease::default_lock_dir() { return "/tmp/kbv-cpu-locks-" + std::to_string(::getuid()); }

CpuLease::CpuLease(int threads, const std::string& dir) {
  const std::vector<int> allowed = affinity_of(0);
  const size_t want = pick_cpu_budget(allowed, threads).cpus.size();
  ::mkdir(dir.c_str(), 0700);
  std::vector<int> taken;
  for (auto it = allowed.rbegin(); it != allowed.rend() && taken.size() < want; ++it) {
    const std::string path = dir + "/cpu" + std::to_string(*it) + ".lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fds_.push_back(fd);
      taken.push_back(*it);
    } else {
      ::close(fd);
    }
  }
  for (auto it = allowed.rbegin(); it != allowed.rend() && taken.size() < want; ++it)
    if (std::find(taken.begin(), taken.end(), *it) == taken.end()) {
      taken.push_back(*it);
      ++shared_;
    }
  std::sort(taken.begin(), taken.end());
  budget_.cpus = taken;
  budget_.threads = static_cast<int>(taken.size());
}

CpuLease::~CpuLease() {
  for (int fd : fds_) ::close(fd);  // closing the descriptor releases its flock
}

std::vector<std::pair<std::string, uint64_t>> flocked_files(const std::string& proc_locks) {
  // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; a waiter's line has "->" after the id.
  std::vector<std::pair<std::string, uint64_t>> out;
  std::istringstream lines(proc_locks);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string id, type, mode, access, pid, file;
    if (!(f >> id >> type) || type != "FLOCK" || !(f >> mode >> access >> pid >> file)) continue;
    const size_t cut = file.rfind(':');
    if (cut == std::string::npos || cut == 0) continue;
    char* end = nullptr;
    const unsigned long long inode = std::strtoull(file.c_str() + cut + 1, &end, 10);
    if (end == file.c_str() + cut + 1 || *end != '\0') continue;
    out.emplace_back(file.substr(0, cut), inode);
  }
  return out;
}

std::vector<int> unleased_cpus(const std::vector<int>& cpus, const std::string& dir) {
  std::ifstream in("/proc/locks");
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  const auto held = flocked_files(text.str());
  std::vector<int> out;
  for (int c : cpus) {
    struct stat st {};
    if (::stat((dir + "/cpu" + std::to_string(c) + ".lock").c_str(), &st) != 0) {
      out.push_back(c);  // never leased on this host
      continue;
    }
    char dev[32];
    std::snprintf(dev, sizeof dev, "%02x:%02x", major(st.st_dev), minor(st.st_dev));
    const bool leased = std::any_of(held.begin(), held.end(), [&](const auto& h) {
      return h.second == static_cast<uint64_t>(st.st_ino) && h.first == dev;
    });
    if (!leased) out.push_back(c);
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) { return cpu_list(mask_of(cpus)); }

std::vector<int> affinity_of(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return {};
  return cpus_of(set);
}

std::vector<int> group_members(int group) {
  std::vector<int> pids;
  if (group <= 0) return pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const int pid = std::atoi(entry.path().filename().c_str());
    if (pid <= 0) continue;
    // read(2), never an istream: a process that ends between open and read makes read fail with
    // ESRCH, which libstdc++'s filebuf throws through an istreambuf_iterator (it crashed kbv).
    const std::string stat = read_file(entry.path() / "stat").text;
    // pid (comm) state ppid pgrp ...: the name may hold spaces and parentheses, so from the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == group) pids.push_back(pid);
  }
  return pids;
}

std::string pin_group(int group, const std::vector<int>& cpus) {
  if (cpus.empty()) return "no CPUs to pin to";
  const cpu_set_t set = mask_of(cpus);
  std::string error;
  int pinned = 0;
  for (int pid : group_members(group))
    for (int tid : tids_of(pid)) {
      if (::sched_setaffinity(tid, sizeof set, &set) == 0)
        ++pinned;
      else if (errno != ESRCH && error.empty())
        error = "sched_setaffinity(" + std::to_string(tid) + ", " + cpu_list(set) + "): " + errno_text();
    }
  if (error.empty() && pinned == 0) error = "process group " + std::to_string(group) + " has no threads";
  return error;
}

std::vector<SchedulingDrift> affinity_outside(int group, const std::vector<int>& cpus) {
  std::vector<SchedulingDrift> out;
  const cpu_set_t want = mask_of(cpus);
  for (int pid : group_members(group))
    for (int tid : tids_of(pid)) {
      cpu_set_t mask;
      CPU_ZERO(&mask);
      if (::sched_getaffinity(tid, sizeof mask, &mask) != 0 || CPU_EQUAL(&mask, &want)) continue;
      out.push_back({tid, "affinity " + cpu_list(mask) + " (budget " + cpu_list(want) + ")", false, ""});
    }
  return out;
}

}  // namespace kbv
