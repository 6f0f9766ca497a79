// Child processes after spawn(): waiting, reaping, process groups, strays and how a child ended
// (see util/subprocess.h). Starting one: spawn.cc; running a command to completion: run_command.cc.
#include "util/subprocess.h"

#include "util/subprocess_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace kbv {
namespace subprocess_internal {

std::mutex g_children_mutex;
std::unordered_set<int> g_children;

void forget_child(int pid) {
  std::lock_guard<std::mutex> lock(g_children_mutex);
  g_children.erase(pid);
}

std::vector<ProcEntry> proc_table() {
  std::vector<ProcEntry> table;
  DIR* dir = ::opendir("/proc");
  if (!dir) return table;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[288];  // "/proc/" + a name of up to 255 bytes + "/stat"
    std::snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    char buffer[512];
    ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) continue;
    buffer[n] = '\0';
    // comm may hold spaces and parentheses: the fields start after the last ')'.
    const char* fields = std::strrchr(buffer, ')');
    ProcEntry p;
    p.pid = std::atoi(e->d_name);
    if (fields && std::sscanf(fields + 1, " %c %d %d", &p.state, &p.ppid, &p.pgrp) == 3) table.push_back(p);
  }
  ::closedir(dir);
  return table;
}

}  // namespace subprocess_internal

namespace {

using namespace subprocess_internal;

bool ended(const ProcEntry& p) { return p.state == 'Z' || p.state == 'X'; }

std::string command_of(int pid) {
  std::string text;
  for (const char* file : {"cmdline", "comm"}) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[160];
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    if (n <= 0) continue;
    text.assign(buffer, static_cast<size_t>(n));
    std::replace(text.begin(), text.end(), '\0', ' ');
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
    if (n == static_cast<ssize_t>(sizeof buffer)) text = text.substr(0, 120) + "...";
    if (!text.empty()) break;
  }
  return text;
}

// Stops `root` and everything under it, then kills them all. A stopped process cannot fork; a
// child made before its parent stopped shows up in the next pass over /proc, until two passes
// find nothing new. Returns the processes it killed.
std::unordered_set<int> kill_tree(int root) {
  std::unordered_set<int> tree{root};
  ::kill(root, SIGSTOP);
  for (int pass = 0, quiet = 0; pass < 200 && quiet < 2; ++pass) {
    const std::vector<ProcEntry> table = proc_table();
    bool grew = false;
    for (bool more = true; more;) {
      more = false;
      for (const ProcEntry& p : table)
        if (tree.count(p.ppid) && tree.insert(p.pid).second) {
          ::kill(p.pid, SIGSTOP);
          more = grew = true;
        }
    }
    quiet = grew ? 0 : quiet + 1;
    if (!grew) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (int pid : tree) ::kill(pid, SIGKILL);
  return tree;
}

// Reaps a child that is not spawn()'s, waiting up to `timeout`.
void reap(int pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int raw = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &raw, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

ExitStatus status_from_wait(int raw) {
  ExitStatus s;
  if (WIFEXITED(raw)) {
    s.exited = true;
    s.code = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    s.signaled = true;
    s.signal = WTERMSIG(raw);
  }
  return s;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
    case SIGSYS: return "SIGSYS";
    default: return nullptr;
  }
}

}  // namespace

uint64_t machine_memory_bytes() {
  uint64_t total = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
        total = static_cast<uint64_t>(kb) * 1024;
        break;
      }
    std::fclose(f);
  }
  // cgroup v2: this process's group ("0::/path") and its memory.max ("max" or bytes).
  std::string group;
  if (std::FILE* f = std::fopen("/proc/self/cgroup", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "0::", 3) == 0) {
        group = line + 3;
        while (!group.empty() && (group.back() == '\n' || group.back() == '\r')) group.pop_back();
      }
    std::fclose(f);
  }
  if (!group.empty())
    if (std::FILE* f = std::fopen(("/sys/fs/cgroup" + group + "/memory.max").c_str(), "r")) {
      unsigned long long limit = 0;
      if (std::fscanf(f, "%llu", &limit) == 1 && limit > 0 && (total == 0 || limit < total)) total = limit;
      std::fclose(f);
    }
  return total;
}

std::string ExitStatus::describe() const {
  if (exited) return "exited with code " + std::to_string(code);
  if (signaled) {
    std::string text = "killed by signal " + std::to_string(signal);
    if (const char* name = signal_name(signal)) text += std::string(" (") + name + ")";
    if (signal == SIGKILL && max_rss_bytes > 0) {
      const double gib = 1024.0 * 1024.0 * 1024.0, peak = static_cast<double>(max_rss_bytes) / gib;
      const uint64_t machine = machine_memory_bytes();
      char buf[256];
      if (machine > 0 && max_rss_bytes * 2 >= machine)
        std::snprintf(buf, sizeof buf,
                      " after using %.1f GiB of memory, of the %.1f GiB this machine allows: most likely killed "
                      "for memory (the kernel's out-of-memory killer)",
                      peak, static_cast<double>(machine) / gib);
      else
        std::snprintf(buf, sizeof buf, " (its peak memory: %.2f GiB)", peak);
      text += buf;
    }
    return text;
  }
  return "ended with an unknown status";
}

std::optional<ExitStatus> try_wait(int pid) {
  int raw = 0;
  for (;;) {
    struct rusage usage{};
    pid_t r = ::wait4(pid, &raw, WNOHANG, &usage);
    if (r == 0) return std::nullopt;
    if (r < 0 && errno == EINTR) continue;
    forget_child(pid);
    if (r == pid) {
      ExitStatus s = status_from_wait(raw);
      s.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
      return s;
    }
    // ECHILD: not our child or already reaped; there is nothing left to wait for.
    return ExitStatus{};
  }
}

std::optional<ExitStatus> wait_for(int pid, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  auto step = std::chrono::microseconds(200);
  for (;;) {
    if (auto status = try_wait(pid)) return status;
    auto now = clock::now();
    if (now >= deadline) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    std::this_thread::sleep_for(std::min(step, left));
    step = std::min(step * 2, std::chrono::microseconds(10000));
  }
}

ExitStatus kill_group(int pid) {
  if (pid <= 0) return ExitStatus{};
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);  // in case the child left its group
  int raw = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &raw, 0);
    if (r < 0 && errno == EINTR) continue;
    forget_child(pid);
    if (r == pid) return status_from_wait(raw);
    return ExitStatus{};
  }
}

std::vector<Stray> kill_strays(int group, std::chrono::milliseconds settle) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + settle;
  // Members of the killed group that are still exiting have not handed their children over yet.
  while (group > 0 && clock::now() < deadline) {
    const std::vector<ProcEntry> table = proc_table();
    if (std::none_of(table.begin(), table.end(), [&](const ProcEntry& p) { return p.pgrp == group && !ended(p); }))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  static std::mutex sweeping;  // one sweep at a time: each stray is reported once
  std::lock_guard<std::mutex> one_at_a_time(sweeping);
  const int self = ::getpid();
  std::vector<Stray> found;
  std::unordered_set<int> killed;
  // Killing a stray's tree hands its members that outlive their parents to this process as well
  // (zombies, or dying): further rounds reap them. Bounded, in case something keeps forking.
  for (int round = 0; round < 50; ++round) {
    std::vector<ProcEntry> strays;
    {
      const std::vector<ProcEntry> table = proc_table();
      std::lock_guard<std::mutex> lock(g_children_mutex);
      for (const ProcEntry& p : table)
        if (p.ppid == self && !g_children.count(p.pid)) strays.push_back(p);
    }
    if (strays.empty()) break;
    for (const ProcEntry& p : strays) {
      if (ended(p)) continue;
      if (!killed.count(p.pid)) found.push_back({p.pid, command_of(p.pid)});  // not one of a tree killed before
      const std::unordered_set<int> tree = kill_tree(p.pid);
      killed.insert(tree.begin(), tree.end());
    }
    for (const ProcEntry& p : strays) reap(p.pid, std::chrono::milliseconds(1000));
  }
  return found;
}

std::vector<Stray> namespace_strays(int group, const std::string& pid_ns) {
  std::vector<Stray> found;
  if (pid_ns.empty()) return found;
  for (const ProcEntry& p : proc_table()) {
    if (p.pgrp == group || ended(p)) continue;
    char path[64], link[128] = {};
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", p.pid);
    ssize_t n = ::readlink(path, link, sizeof link - 1);
    if (n > 0 && pid_ns == link) found.push_back({p.pid, command_of(p.pid)});
  }
  return found;
}

std::vector<int> stop_processes(int group, const std::string& pid_ns, bool with_strays) {
  const int self = ::getpid();
  std::unordered_set<int> stopped;
  auto in_namespace = [&](int pid) {
    if (pid_ns.empty()) return false;
    char path[64], link[128] = {};
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    const ssize_t n = ::readlink(path, link, sizeof link - 1);
    return n > 0 && pid_ns == link;
  };
  if (group > 0) ::kill(-group, SIGSTOP);
  for (int pass = 0, quiet = 0; pass < 200 && quiet < 2; ++pass) {
    const std::vector<ProcEntry> table = proc_table();
    bool grew = false;
    for (bool more = true; more;) {
      more = false;
      for (const ProcEntry& p : table) {
        if (ended(p) || p.pid == self || stopped.count(p.pid)) continue;
        bool take = (group > 0 && p.pgrp == group) || stopped.count(p.ppid) > 0;
        if (!take && with_strays && p.ppid == self) {
          std::lock_guard<std::mutex> lock(g_children_mutex);
          take = !g_children.count(p.pid);  // a stray adopted by this process
        }
        if (!take) take = in_namespace(p.pid);
        if (!take) continue;
        ::kill(p.pid, SIGSTOP);
        stopped.insert(p.pid);
        more = grew = true;
      }
    }
    quiet = grew ? 0 : quiet + 1;
    if (!grew) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {stopped.begin(), stopped.end()};
}

std::vector<int> group_processes(int group, const std::string& pid_ns) {
  std::unordered_set<int> found;
  const std::vector<ProcEntry> table = proc_table();
  for (bool more = true; more;) {
    more = false;
    for (const ProcEntry& p : table) {
      if (ended(p) || found.count(p.pid)) continue;
      bool take = (group > 0 && p.pgrp == group) || found.count(p.ppid) > 0;
      if (!take && !pid_ns.empty()) {
        char path[64], link[128] = {};
        std::snprintf(path, sizeof path, "/proc/%d/ns/pid", p.pid);
        take = ::readlink(path, link, sizeof link - 1) > 0 && pid_ns == link;
      }
      if (!take) continue;
      found.insert(p.pid);
      more = true;
    }
  }
  return {found.begin(), found.end()};
}

void continue_processes(const std::vector<int>& pids, int group) {
  for (int pid : pids) ::kill(pid, SIGCONT);
  if (group > 0) ::kill(-group, SIGCONT);
}

char process_state(int pid) {
  for (const ProcEntry& p : proc_table())
    if (p.pid == pid) return p.state;
  return '?';
}

}  // namespace kbv
