// Progress of a long evaluation. On a terminal: one live status line redrawn in place
// (done/total, correct, failed, what is running, elapsed, ETA), with finished items printed
// above it. Otherwise: the finished items' lines plus a plain status line every `period`.
// On Ctrl-C (util/interrupt.h) it prints once where things stand and what is abandoned.
// Thread-safe: several evaluation threads report to one Progress.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace kbv {

// "45s", "3m20s", "2h05m".
std::string format_duration(double seconds);
// Seconds left at the average pace so far; none before the first item finished.
std::optional<double> eta_seconds(size_t done, size_t total, double elapsed_s);

class Progress {
 public:
  struct Options {
    FILE* out = stderr;
    std::optional<bool> live;                 // default: whether `out` is a terminal
    std::chrono::milliseconds period{30000};  // plain status lines; 0: none (and no ticker thread)
    std::function<double()> clock;            // seconds; default: steady clock (tests inject one)
  };
  Progress(size_t total, Options options);
  ~Progress();  // stop()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Item `id` started running (shown as "now: <what>" until it finishes).
  void started(size_t id, const std::string& what);
  // Item `id` finished: counts it and prints `line` (above the live line on a terminal).
  void finished(size_t id, bool correct, const std::string& line);
  // Stops the ticker and clears the live line; idempotent. Call before printing a final summary.
  void stop();

  // The status as one line: "[12/40] 5 correct, 7 failed · now: level 1 problem 19 sample 2 ·
  // 1m05s elapsed · ETA 3m20s".
  std::string status() const;
  // Where things stand after Ctrl-C: counts and the items abandoned (their results are not stored).
  std::string interrupt_summary() const;
  bool live() const { return live_; }

 private:
  std::string status_locked() const;
  std::string interrupt_summary_locked() const;
  void report_interrupt_locked();
  void redraw_locked();
  void tick();

  size_t total_;
  Options options_;
  bool live_ = false;
  double start_s_ = 0;
  double last_plain_s_ = 0;  // the last periodic line (plain) or redraw (live)
  mutable std::mutex mu_;
  std::condition_variable wake_;
  size_t done_ = 0, correct_ = 0;
  std::map<size_t, std::string> running_;
  bool stopped_ = false;
  bool interrupt_reported_ = false;
  std::thread ticker_;
};

}  // namespace kbv
