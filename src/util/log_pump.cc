#include "util/log_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace kbv {
namespace {

struct Pipe {
  int read_fd = -1;
  int log_fd = -1;
  std::filesystem::path log;
  LogCap cap;
  off_t start = 0;         // the log's size when the pump took it over
  size_t head = 0;         // bytes written as they came
  size_t dropped = 0;      // bytes neither in the head nor in the tail
  std::deque<char> tail;   // the last bytes once the head is full
  bool tail_dirty = false;
  bool done = false;       // end of file: flushed and closed
};

class Pump {
 public:
  static Pump& get() {
    static Pump* pump = new Pump();  // never destroyed: its thread lives as long as the process
    return *pump;
  }

  void add(int read_fd, int log_fd, const std::filesystem::path& log, LogCap cap) {
    struct stat st {};
    ::fstat(log_fd, &st);
    ::fcntl(read_fd, F_SETFL, ::fcntl(read_fd, F_GETFL) | O_NONBLOCK);
    if (cap.keep_tail > cap.cap) cap.keep_tail = cap.cap;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Pipe p;
      p.read_fd = read_fd;
      p.log_fd = log_fd;
      p.log = log;
      p.cap = cap;
      p.start = st.st_size;
      pipes_.push_back(std::move(p));
      if (!started_) {
        started_ = true;
        std::thread([this] { run(); }).detach();
      }
    }
    wake();
  }

  void drain(const std::filesystem::path& log, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      bool pending = false;
      for (Pipe& p : pipes_) {
        if (p.log != log || p.done) continue;
        int queued = 0;
        if (::ioctl(p.read_fd, FIONREAD, &queued) == 0 && queued > 0) pending = true;
        if (p.tail_dirty) flush_tail(p);
      }
      if (!pending || std::chrono::steady_clock::now() >= deadline) return;
      lock.unlock();
      wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lock.lock();
    }
  }

 private:
  Pump() {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
  }

  void wake() {
    if (wake_[1] >= 0) {
      char c = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_[1], &c, 1);
    }
  }

  // Rewrites what follows the head: the line about the dropped bytes, then the tail.
  static void flush_tail(Pipe& p) {
    std::string text = "\n[kbv: " + std::to_string(p.dropped) + " bytes of output dropped here; the log keeps the first " +
                       std::to_string(p.head) + " and the last " + std::to_string(p.tail.size()) + "]\n";
    text.append(p.tail.begin(), p.tail.end());
    const off_t at = p.start + static_cast<off_t>(p.head);
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::pwrite(p.log_fd, text.data() + done, text.size() - done, at + static_cast<off_t>(done));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    [[maybe_unused]] int r = ::ftruncate(p.log_fd, at + static_cast<off_t>(done));
    p.tail_dirty = false;
  }

  static void take(Pipe& p, const char* data, size_t n) {
    const size_t head_room = p.cap.cap - p.cap.keep_tail;
    if (p.head < head_room && p.dropped == 0 && p.tail.empty()) {
      const size_t k = std::min(n, head_room - p.head);
      size_t done = 0;
      while (done < k) {
        ssize_t w = ::pwrite(p.log_fd, data + done, k - done, p.start + static_cast<off_t>(p.head + done));
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
      p.head += k;
      data += k;
      n -= k;
    }
    if (n == 0) return;
    p.tail.insert(p.tail.end(), data, data + n);
    if (p.tail.size() > p.cap.keep_tail) {
      const size_t excess = p.tail.size() - p.cap.keep_tail;
      p.tail.erase(p.tail.begin(), p.tail.begin() + static_cast<std::ptrdiff_t>(excess));
      p.dropped += excess;
    }
    p.tail_dirty = true;
  }

  void run() {
    std::vector<char> buffer(1 << 16);
    for (;;) {
      std::vector<pollfd> fds;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pipes_.remove_if([](const Pipe& p) { return p.done; });
        fds.push_back({wake_[0], POLLIN, 0});
        for (const Pipe& p : pipes_) fds.push_back({p.read_fd, POLLIN, 0});
      }
      int ready = ::poll(fds.data(), fds.size(), 250);
      if (ready < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (fds[0].revents & POLLIN)
        while (::read(wake_[0], buffer.data(), buffer.size()) > 0) {
        }
      std::lock_guard<std::mutex> lock(mutex_);
      for (Pipe& p : pipes_) {
        bool eof = false;
        for (int round = 0; round < 64; ++round) {  // bounded: one flooding child cannot starve the rest
          ssize_t n = ::read(p.read_fd, buffer.data(), buffer.size());
          if (n > 0) {
            take(p, buffer.data(), static_cast<size_t>(n));
            continue;
          }
          if (n == 0) eof = true;
          break;  // EAGAIN, or an error: look again at the next poll
        }
        if (p.tail_dirty && (eof || ready == 0)) flush_tail(p);
        if (eof) {
          if (p.tail_dirty) flush_tail(p);
          ::close(p.read_fd);
          ::close(p.log_fd);
          p.done = true;
        }
      }
    }
  }

  std::mutex mutex_;
  std::list<Pipe> pipes_;
  bool started_ = false;
  int wake_[2] = {-1, -1};
};

}  // namespace

void pump_log(int read_fd, int log_fd, const std::filesystem::path& log, LogCap cap) {
  Pump::get().add(read_fd, log_fd, log, cap);
}

void drain_log(const std::filesystem::path& log, std::chrono::milliseconds timeout) { Pump::get().drain(log, timeout); }

}  // namespace kbv
