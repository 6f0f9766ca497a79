// A queue worker process for the reliability tests and the overhead benchmark: the library's
// worker loop (src/queue/worker_loop.*) with a stand-in executor instead of an evaluation.
//   kbv_queue_drainer URL OUT MODE TOTAL [LEASE_S]
// MODE: noop | sleep:MS | child:MS (starts `sleep 600` through kbv's spawner, writes
// "child PID" to OUT, then sleeps MS). Each job run appends "ran ID PID" to OUT (one write, so
// lines of several processes do not mix) and completes with {"ran_by": PID}. Stops once TOTAL jobs
// are done or failed, or on SIGTERM/SIGINT. Prints its LoopStats as one JSON line on stdout.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "queue/worker_loop.h"
#include "util/interrupt.h"
#include "util/subprocess.h"

int main(int argc, char** argv) {
  using namespace kbv::queue;
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s URL OUT MODE TOTAL [LEASE_S]\n", argv[0]);
    return 2;
  }
  const std::string url = argv[1], out = argv[2], mode = argv[3];
  const long long total = std::atoll(argv[4]);
  const double lease_s = argc > 5 ? std::atof(argv[5]) : 30.0;
  kbv::install_interrupt_handler();
  std::string error;
  auto queue = Queue::open(url, error);
  if (!queue) {
    std::fprintf(stderr, "drainer: %s\n", error.c_str());
    return 2;
  }
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) {
    std::perror(out.c_str());
    return 2;
  }
  auto line = [fd](const std::string& text) {
    const std::string l = text + "\n";
    if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::perror("write");
  };
  const int pid = ::getpid();
  int sleep_ms = 0;
  if (mode.rfind("sleep:", 0) == 0) sleep_ms = std::atoi(mode.c_str() + 6);
  if (mode.rfind("child:", 0) == 0) sleep_ms = std::atoi(mode.c_str() + 6);
  const bool child = mode.rfind("child:", 0) == 0;

  Executor executor = [&](const Job& job) {
    if (child) {
      kbv::SpawnOptions spawn;
      spawn.argv = {"sleep", "600"};
      spawn.protocol_pipes = false;
      std::string why;
      auto c = kbv::spawn(spawn, why);
      if (!c) return ExecResult{ExecResult::Kind::retry, {}, "cannot start the child: " + why};
      line("child " + std::to_string(c->pid));
    }
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    line("ran " + job.id + " " + std::to_string(pid));
    return ExecResult{ExecResult::Kind::done, {{"ran_by", pid}}, ""};
  };
  // The stop condition asks the database how many jobs have ended, at most every 50 ms.
  auto last_check = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  bool all_ended = false;
  LoopOptions options;
  options.worker = default_worker_name();
  options.lease_seconds = lease_s;
  options.heartbeat_seconds = lease_s / 4;
  options.idle_seconds = 0.02;
  options.stop = [&] {
    if (kbv::interrupted()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < std::chrono::milliseconds(50)) return all_ended;
    last_check = now;
    std::string e;
    auto counts = queue->counts(e);
    all_ended = counts && counts->done + counts->failed >= total;
    return all_ended;
  };
  LoopStats stats = run_worker_loop(*queue, executor, options, [](const kbv::Notice& n) {
    if (n.kind == kbv::Notice::Kind::warning) std::fprintf(stderr, "drainer: %s\n", n.text.c_str());
  });
  std::printf("{\"done\": %lld, \"failed\": %lld, \"lost\": %lld, \"db_errors\": %lld, \"released\": %lld}\n",
              stats.done, stats.failed, stats.lost, stats.db_errors, stats.released);
  ::close(fd);
  return 0;
}
