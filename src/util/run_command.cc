// Running a command to completion with a deadline and its output captured (builds, probes), and
// the tail of a log file (see util/subprocess.h).
#include "util/subprocess.h"

#include "util/pause.h"
#include "util/subprocess_internal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>

namespace kbv {

using subprocess_internal::errno_text;
using subprocess_internal::spawn_with_output;

RunResult run_command(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env_set,
                      std::chrono::milliseconds timeout, size_t max_output, bool pausable) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  RunResult result;

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.error = "cannot create a pipe: " + errno_text(errno);
    return result;
  }
  SpawnOptions options;
  options.argv = argv;
  options.env_set = env_set;
  options.protocol_pipes = false;
  auto child = spawn_with_output(options, out[1], result.error);
  ::close(out[1]);
  if (!child) {
    ::close(out[0]);
    return result;
  }
  result.started = true;
  std::optional<PausableProcess> pause;
  if (pausable) pause.emplace(child->pid);
  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);

  auto keep_tail = [&](bool final) {
    if (result.output.size() > (final ? max_output : 2 * max_output + (1 << 16)))
      result.output.erase(0, result.output.size() - max_output);
  };
  // Reads what is available now; false once the pipe reached end of file.
  bool pipe_open = true;
  auto drain = [&] {
    char buffer[1 << 16];
    while (pipe_open) {
      ssize_t n = ::read(out[0], buffer, sizeof buffer);
      if (n > 0) {
        result.output.append(buffer, static_cast<size_t>(n));
        keep_tail(false);
      } else if (n == 0) {
        pipe_open = false;
      } else if (errno != EINTR) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) pipe_open = false;
        return;
      }
    }
  };

  std::optional<ExitStatus> status;
  for (;;) {
    drain();
    // The child is checked as well as the pipe: a background grandchild may hold the pipe
    // open long after the command itself has finished. WNOWAIT leaves the child a zombie, so
    // its pid (and group id) stays reserved until the leftovers of the group are killed.
    siginfo_t info{};
    int r = ::waitid(P_PID, static_cast<id_t>(child->pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || info.si_pid == child->pid) {
      pause.reset();
      ::kill(-child->pid, SIGKILL);  // background jobs of a finished build go too
      status = try_wait(child->pid);
      while (!status) status = wait_for(child->pid, std::chrono::milliseconds(1000));
      break;
    }
    auto now = clock::now();
    if (now >= deadline) break;
    int wait_ms = static_cast<int>(std::min<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1, 20));
    if (pipe_open) {
      struct pollfd pfd {out[0], POLLIN, 0};
      ::poll(&pfd, 1, wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(wait_ms, 5)));
    }
  }
  if (status) {
    drain();
    result.status = *status;
  } else {
    result.timed_out = true;
    pause.reset();
    result.status = kill_group(child->pid);
    drain();
  }
  ::close(out[0]);
  keep_tail(true);
  return result;
}

std::string tail_file(const std::filesystem::path& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0) {
    off_t size = st.st_size;
    off_t start = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
    text.resize(static_cast<size_t>(size - start));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::pread(fd, text.data() + got, text.size() - got, start + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return text;
}

}  // namespace kbv
