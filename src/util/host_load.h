// How busy the rest of the host was while kbv timed something on the CPU. ATen's intra-op pool
// uses every core, so one core held by another process makes each parallel region wait for a
// descheduled thread: a CPU ReLU measured 0.07 ms on an idle 2-core machine and 2.1-2.8 ms beside
// one busy loop (docs/TIMING.md). The supervisor reads /proc around a timing request: the host's
// busy time less that of kbv's own processes is what the others used.
#pragma once
#include <ctime>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace kbv {

// Other processes holding this many cores' worth of CPU over a CPU timing make it untrustworthy:
// the record says so and the baseline is not cached. KBV_HOST_BUSY_CORES overrides it.
inline constexpr double kHostBusyCores = 0.25;
double host_busy_cores();

// Seconds of busy CPU of the whole host from /proc/stat's first line ("cpu  user nice system idle
// iowait irq softirq steal ..."): user + nice + system + irq + softirq + steal (steal: a
// hypervisor gave the core to someone else). nullopt if the text is not that line.
std::optional<double> proc_stat_busy_s(std::string_view proc_stat, double ticks_per_s);
// Seconds of CPU (utime + stime, all threads) of one process from /proc/<pid>/stat.
std::optional<double> pid_stat_cpu_s(std::string_view pid_stat, double ticks_per_s);

// Milliseconds a thread has waited on a run queue for a CPU since it started: the second field of
// /proc/<tid>/schedstat ("<on-CPU ns> <waiting ns> <slices>", the kernel's sched_info, updated
// when the thread next gets a CPU). nullopt if the text is not that line.
std::optional<double> schedstat_wait_ms(std::string_view schedstat);

// One thread's wait for a CPU (schedstat_wait_ms), read again and again through one open file: the
// per-call outside bound reads it around every timed call (measure/call_bound.h).
class ThreadWait {
 public:
  // pid: a process's main thread; 0: the calling thread. Negative (a worker not running) or
  // unreadable (no such process, hidepid, a kernel without CONFIG_SCHED_INFO): every ms() is nullopt.
  explicit ThreadWait(int pid);
  ~ThreadWait();
  ThreadWait(const ThreadWait&) = delete;
  ThreadWait& operator=(const ThreadWait&) = delete;
  std::optional<double> ms() const;

 private:
  int fd_ = -1;
};

// CPU time of every thread of one process, to the nanosecond, read from outside it: the kernel's
// process CPU clock (clock_getcpuclockid), which counts a running thread up to the moment of the
// read, where /proc's figures lag by up to a scheduler tick. The per-call CPU bound reads the
// candidate worker's around every timed call (measure/call_bound.h bound_cpu): CPU time is never
// inflated by waiting, so a busy host does not blur it as it blurs the wall-clock windows.
class ProcessCpuTime {
 public:
  // pid: a process (its thread group) as this process's PID namespace names it. Negative, or a
  // clock the kernel refuses: every ms() is nullopt.
  explicit ProcessCpuTime(int pid);
  std::optional<double> ms() const;

 private:
  bool ok_ = false;
  clockid_t clock_{};
};

// Fields of /proc/<pid>/stat that say whose a process is and what it spent: its process group and
// session (kbv's workers share kbv's session), its own CPU time (utime + stime) and that of the
// children it has waited for (cutime + cstime), in seconds. Nullopt when the text does not parse.
struct PidStat {
  long ppid = 0, pgrp = 0, session = 0;
  double cpu_s = 0, children_cpu_s = 0;
};
std::optional<PidStat> parse_pid_stat(std::string_view pid_stat, double ticks_per_s);

// The CPU time of the processes beside one worker process: those in its process group, its PID
// namespace (where that is not this process's; a helper that called setsid leaves the group, not
// the namespace) or descended from it (a setsid helper without a PID namespace: --sandbox off),
// itself excluded, and the children it has waited for (a helper that exited). Not seen: a helper
// that left the group by a double fork where there is no PID namespace (its parent is then kbv,
// the subreaper).
// Read from /proc at construction and at each ms(): a process that appeared since counts whole,
// one gone since through the worker's children's time.
// The per-call CPU bound reads only the worker's own clock; a helper process computing its calls
// would hide from it (docs/TIMING.md "What bounds each figure", T22). Live processes are read by
// their CPU clocks (ns); the children's time only in /proc's ticks (10 ms at 100 Hz). A /proc scan
// costs milliseconds: a total over a timed run, not a per-call figure.
class BesideCpu {
 public:
  explicit BesideCpu(int pid);
  // CPU ms the processes beside the worker used since construction; nullopt when the worker's own
  // /proc entry could not be read (it is gone, or this is not Linux).
  std::optional<double> ms() const;

 private:
  struct Snapshot {
    std::map<int, double> beside_s;  // pid -> CPU seconds
    double children_s = 0;
  };
  std::optional<Snapshot> snapshot() const;
  int pid_;
  std::optional<Snapshot> start_;
};

class HostLoadProbe {
 public:
  // Reads the host's and these processes' CPU time now (this process is always counted as ours).
  explicit HostLoadProbe(std::vector<int> ours);
  // Cores' worth of CPU that other processes used since construction (0 when none), or nullopt
  // when /proc could not be read (not Linux, a process gone).
  std::optional<double> other_cores() const;

 private:
  std::optional<double> ours_s() const;
  std::vector<int> pids_;
  std::optional<double> busy0_, ours0_;
  double t0_ = 0;
};

}  // namespace kbv
