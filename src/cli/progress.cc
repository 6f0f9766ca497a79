#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

#include "util/interrupt.h"

namespace kbv {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The terminal's width, so the live line never wraps (a wrapped line cannot be redrawn in place).
size_t terminal_width(FILE* out) {
  struct winsize ws {};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
  return 100;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() < width) return s;
  size_t cut = width > 4 ? width - 4 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return s.substr(0, cut) + "...";
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  long s = std::lround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::optional<double> eta_seconds(size_t done, size_t total, double elapsed_s) {
  if (done == 0 || total < done || !(elapsed_s >= 0)) return std::nullopt;
  return elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
}

Progress::Progress(size_t total, Options options) : total_(total), options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_seconds;
  live_ = options_.live.value_or(isatty(fileno(options_.out)) == 1);
  start_s_ = last_plain_s_ = options_.clock();
  if (total_ > 0 && (live_ || options_.period.count() > 0)) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() { stop(); }

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    // Stopped by Ctrl-C before the ticker noticed: say where things stand now.
    if (interrupted() && total_ > 0 && !interrupt_reported_) report_interrupt_locked();
    stopped_ = true;
    if (live_ && total_ > 0) {
      std::fputs("\r\033[K", options_.out);
      std::fflush(options_.out);
    }
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::started(size_t id, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  running_[id] = what;
  if (live_ && !stopped_) redraw_locked();
}

void Progress::finished(size_t id, bool correct, const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(id);
  ++done_;
  if (correct) ++correct_;
  if (live_ && !stopped_) std::fputs("\r\033[K", options_.out);
  std::fprintf(options_.out, "%s\n", line.c_str());
  if (live_ && !stopped_) redraw_locked();
  std::fflush(options_.out);
}

std::string Progress::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_locked();
}

std::string Progress::status_locked() const {
  const double elapsed = options_.clock() - start_s_;
  std::string s = fmt::format("[{}/{}] {} correct, {} failed", done_, total_, correct_, done_ - correct_);
  if (!running_.empty()) {
    s += " · now: ";
    size_t shown = 0;
    for (const auto& [id, what] : running_) {
      if (shown == 2) {
        s += fmt::format(" +{}", running_.size() - shown);
        break;
      }
      s += (shown ? ", " : "") + what;
      ++shown;
    }
  }
  s += " · " + format_duration(elapsed) + " elapsed";
  if (auto eta = eta_seconds(done_, total_, elapsed)) s += " · ETA " + format_duration(*eta);
  return s;
}

std::string Progress::interrupt_summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return interrupt_summary_locked();
}

void Progress::report_interrupt_locked() {
  interrupt_reported_ = true;
  if (live_) std::fputs("\r\033[K", options_.out);
  std::fprintf(options_.out, "kbv: %s\n", interrupt_summary_locked().c_str());
  if (live_ && !stopped_) redraw_locked();
  std::fflush(options_.out);
}

std::string Progress::interrupt_summary_locked() const {
  std::string s = fmt::format("Ctrl-C: stopping; {} of {} finished and stored ({} correct, {} failed)", done_, total_,
                              correct_, done_ - correct_);
  if (!running_.empty()) {
    s += "; abandoned, not stored:";
    for (const auto& [id, what] : running_) s += " " + what + ";";
    s.pop_back();
  }
  return s;
}

void Progress::redraw_locked() {
  std::fprintf(options_.out, "\r\033[K%s", fit(status_locked(), terminal_width(options_.out) - 1).c_str());
  std::fflush(options_.out);
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    if (stopped_) break;
    if (interrupted() && !interrupt_reported_) {
      report_interrupt_locked();
      continue;
    }
    const double now = options_.clock();
    if (live_) {
      if (now - last_plain_s_ >= 1.0) {  // elapsed and ETA move even while one long item runs
        last_plain_s_ = now;
        redraw_locked();
      }
    } else if (options_.period.count() > 0 && now - last_plain_s_ >= options_.period.count() / 1000.0) {
      last_plain_s_ = now;
      std::fprintf(options_.out, "kbv: progress %s\n", status_locked().c_str());
      std::fflush(options_.out);
    }
  }
}

}  // namespace kbv
