#include "util/host_load.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "util/fs.h"

namespace kbv {
namespace {

double ticks_per_s() {
  const long t = sysconf(_SC_CLK_TCK);
  return t > 0 ? static_cast<double>(t) : 100.0;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double host_busy_cores() {
  if (const char* v = std::getenv("KBV_HOST_BUSY_CORES")) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end != v && x > 0) return x;
  }
  return kHostBusyCores;
}

std::optional<double> proc_stat_busy_s(std::string_view proc_stat, double ticks) {
  std::istringstream in{std::string(proc_stat.substr(0, proc_stat.find('\n')))};
  std::string label;
  // user nice system idle iowait irq softirq steal: guest time is already inside user and nice.
  unsigned long long f[8] = {};
  if (!(in >> label) || label != "cpu") return std::nullopt;
  for (auto& x : f)
    if (!(in >> x)) return std::nullopt;
  const unsigned long long busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  return static_cast<double>(busy) / ticks;
}

std::optional<double> pid_stat_cpu_s(std::string_view pid_stat, double ticks) {
  std::optional<PidStat> p = parse_pid_stat(pid_stat, ticks);
  if (!p) return std::nullopt;
  return p->cpu_s;
}

std::optional<double> schedstat_wait_ms(std::string_view schedstat) {
  std::istringstream in{std::string(schedstat.substr(0, schedstat.find('\n')))};
  unsigned long long on_cpu_ns = 0, waiting_ns = 0;
  if (!(in >> on_cpu_ns >> waiting_ns)) return std::nullopt;
  return static_cast<double>(waiting_ns) / 1e6;
}

ThreadWait::ThreadWait(int pid) {
  if (pid < 0) return;  // no such process (a worker not running): unknown, never this thread's
  const std::string path = pid > 0 ? "/proc/" + std::to_string(pid) + "/schedstat" : "/proc/thread-self/schedstat";
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

ThreadWait::~ThreadWait() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<double> ThreadWait::ms() const {
  if (fd_ < 0) return std::nullopt;
  char buf[128];
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);  // a proc file reads afresh from offset 0
  if (n <= 0) return std::nullopt;
  return schedstat_wait_ms(std::string_view(buf, static_cast<size_t>(n)));
}

std::optional<PidStat> parse_pid_stat(std::string_view pid_stat, double ticks) {
  const size_t close = pid_stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream in{std::string(pid_stat.substr(close + 1))};
  std::string state;
  PidStat p;
  unsigned long long skip = 0, utime = 0, stime = 0;
  long long cutime = 0, cstime = 0;
  if (!(in >> state >> p.ppid >> p.pgrp >> p.session)) return std::nullopt;  // fields 3-6
  for (int i = 7; i <= 13; ++i)                                             // tty_nr .. cmajflt
    if (!(in >> skip)) return std::nullopt;
  if (!(in >> utime >> stime >> cutime >> cstime)) return std::nullopt;  // fields 14-17
  p.cpu_s = static_cast<double>(utime + stime) / ticks;
  p.children_cpu_s = static_cast<double>(std::max<long long>(cutime + cstime, 0)) / ticks;
  return p;
}

namespace {

std::string pid_namespace_of(const std::string& pid) {
  std::error_code ec;
  const std::filesystem::path link = std::filesystem::read_symlink("/proc/" + pid + "/ns/pid", ec);
  return ec ? std::string() : link.string();
}

}  // namespace

BesideCpu::BesideCpu(int pid) : pid_(pid) { start_ = snapshot(); }

std::optional<BesideCpu::Snapshot> BesideCpu::snapshot() const {
  if (pid_ <= 0) return std::nullopt;
  const double ticks = ticks_per_s();
  FileText own = read_file("/proc/" + std::to_string(pid_) + "/stat");
  std::optional<PidStat> worker = own.ok ? parse_pid_stat(own.text, ticks) : std::nullopt;
  if (!worker) return std::nullopt;
  // Its PID namespace counts only where it has its own: in ours, every process would.
  std::string ns = pid_namespace_of(std::to_string(pid_));
  if (ns == pid_namespace_of("self")) ns.clear();
  Snapshot snap;
  snap.children_s = worker->children_cpu_s;
  std::map<int, PidStat> all;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    FileText t = read_file(entry.path() / "stat");
    if (std::optional<PidStat> p = t.ok ? parse_pid_stat(t.text, ticks) : std::nullopt) all[std::atoi(name.c_str())] = *p;
  }
  // Descended from the worker: its parent chain reaches it (bounded: a chain read while processes
  // come and go may loop).
  auto descends = [&](int p) {
    for (int depth = 0; depth < 64; ++depth) {
      auto it = all.find(p);
      if (it == all.end() || it->second.ppid <= 1) return false;
      if (it->second.ppid == pid_) return true;
      p = static_cast<int>(it->second.ppid);
    }
    return false;
  };
  for (const auto& [other, p] : all) {
    if (other == pid_) continue;
    if (p.pgrp != worker->pgrp && !descends(other) &&
        (ns.empty() || pid_namespace_of(std::to_string(other)) != ns))
      continue;
    // The process CPU clock to the nanosecond where the kernel gives it (/proc's ticks are 10 ms).
    const std::optional<double> precise = ProcessCpuTime(other).ms();
    snap.beside_s[other] = precise ? *precise / 1000.0 : p.cpu_s;
  }
  return snap;
}

std::optional<double> BesideCpu::ms() const {
  std::optional<Snapshot> now = snapshot();
  if (!start_ || !now) return std::nullopt;
  double s = now->children_s - start_->children_s;
  for (const auto& [pid, cpu] : now->beside_s) {
    auto before = start_->beside_s.find(pid);
    s += cpu - (before == start_->beside_s.end() ? 0.0 : before->second);
  }
  // A process gone since start: its whole time came into the worker's children's (when the worker
  // waited for it), of which the part before start was counted already.
  for (const auto& [pid, cpu] : start_->beside_s)
    if (!now->beside_s.count(pid)) s -= cpu;
  return std::max(s, 0.0) * 1000.0;
}

ProcessCpuTime::ProcessCpuTime(int pid) {
  if (pid <= 0) return;  // 0 would be this process: never the candidate's
  ok_ = ::clock_getcpuclockid(static_cast<pid_t>(pid), &clock_) == 0;
}

std::optional<double> ProcessCpuTime::ms() const {
  timespec ts{};
  if (!ok_ || ::clock_gettime(clock_, &ts) != 0) return std::nullopt;
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

HostLoadProbe::HostLoadProbe(std::vector<int> ours) : pids_(std::move(ours)) {
  t0_ = now_s();
  if (FileText t = read_file("/proc/stat"); t.ok) busy0_ = proc_stat_busy_s(t.text, ticks_per_s());
  ours0_ = ours_s();
}

std::optional<double> HostLoadProbe::ours_s() const {
  double sum = 0;
  FileText self = read_file("/proc/self/stat");
  std::optional<double> s = self.ok ? pid_stat_cpu_s(self.text, ticks_per_s()) : std::nullopt;
  if (!s) return std::nullopt;
  sum += *s;
  for (int pid : pids_) {
    if (pid <= 0) continue;
    FileText t = read_file("/proc/" + std::to_string(pid) + "/stat");
    std::optional<double> p = t.ok ? pid_stat_cpu_s(t.text, ticks_per_s()) : std::nullopt;
    if (!p) return std::nullopt;
    sum += *p;
  }
  return sum;
}

std::optional<double> HostLoadProbe::other_cores() const {
  if (!busy0_ || !ours0_) return std::nullopt;
  FileText t = read_file("/proc/stat");
  std::optional<double> busy = t.ok ? proc_stat_busy_s(t.text, ticks_per_s()) : std::nullopt;
  std::optional<double> ours = ours_s();
  const double wall = now_s() - t0_;
  if (!busy || !ours || wall <= 0) return std::nullopt;
  const double others = (*busy - *busy0_) - (*ours - *ours0_);
  return others > 0 ? others / wall : 0.0;
}

}  // namespace kbv
