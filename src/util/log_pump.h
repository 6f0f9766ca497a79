// A child's stdout and stderr into its log file through a pipe, with the file bounded: the first
// `cap - keep_tail` bytes as written, then a line saying how many bytes were dropped, then the last
// `keep_tail` bytes (where a traceback is). A candidate that floods its output (16 MiB and more)
// fills no disk, and the end of its output, which says why it died, is still there.
// One thread in the process serves every pipe (poll); it is started on first use.
#pragma once
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

namespace kbv {

struct LogCap {
  size_t cap = 16u << 20;       // most bytes the log file holds for this child
  size_t keep_tail = 1u << 20;  // of which the last bytes of the output
};

// Starts pumping `read_fd` (the read end of the child's output pipe) into `log_fd` (the file
// `log`, opened for writing; what it held is kept and the output appended). Both are taken over
// and closed at end of file.
void pump_log(int read_fd, int log_fd, const std::filesystem::path& log, LogCap cap);

// Waits, up to `timeout`, until what is in `log`'s pipe right now is in the file (for reading a
// dead child's last words). Returns at once for a log no pump writes.
void drain_log(const std::filesystem::path& log, std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

}  // namespace kbv
