// What the sandbox adds to a worker's start (DESIGN.md, "Sandbox"): a candidate worker started and
// answering `hello`, alternately with --sandbox off and strict, N times each; and the spawner alone
// (plan + fork + namespaces + mounts + Landlock + seccomp + exec of /bin/true, waited for).
//   build/kbv_sandbox_bench [N] [python]     medians and all samples in ms, to stdout
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"
#include "supervisor/session.h"
#include "util/subprocess.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void print(const char* what, const std::vector<double>& v) {
  std::printf("%-34s median %8.1f ms  (", what, median(v));
  for (double x : v) std::printf(" %.1f", x);
  std::printf(" )\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 5;
  kbv::WorkerConfig config = kbv::default_worker_config(argc > 2 ? argv[2] : "");
  fs::path dir = fs::temp_directory_path() / ("kbv-sandbox-bench-" + std::to_string(::getpid()));
  config.log_dir = dir / "logs";
  std::vector<double> spawn_off, spawn_strict, worker_off, worker_strict;
  for (int i = 0; i < n; ++i) {
    for (kbv::sandbox::Mode mode : {kbv::sandbox::Mode::off, kbv::sandbox::Mode::strict}) {
      // The spawner alone.
      auto t0 = Clock::now();
      kbv::sandbox::Plan plan;
      std::string error;
      kbv::SpawnOptions o;
      o.argv = {"/bin/true"};
      o.protocol_pipes = false;
      std::error_code ec;
      fs::create_directories(dir / "scratch", ec);
      if (mode != kbv::sandbox::Mode::off) {
        kbv::sandbox::Paths paths;
        paths.scratch = (dir / "scratch").string();
        paths.shm = (dir / "scratch").string();
        plan = kbv::sandbox::make_plan(mode, "candidate", kbv::sandbox::probe(), config.python, paths, error);
        if (!error.empty()) {
          std::fprintf(stderr, "kbv_sandbox_bench: %s\n", error.c_str());
          return 2;
        }
        o.sandbox = &plan;
      }
      auto child = kbv::spawn(o, error);
      if (!child) {
        std::fprintf(stderr, "kbv_sandbox_bench: %s\n", error.c_str());
        return 2;
      }
      kbv::wait_for(child->pid, std::chrono::seconds(10));
      (mode == kbv::sandbox::Mode::off ? spawn_off : spawn_strict).push_back(ms_since(t0));

      // A candidate worker, started and answering hello (Python and torch imported).
      config.sandbox = mode;
      t0 = Clock::now();
      auto w = kbv::WorkerProcess::start("candidate", config, {}, error);
      if (!w) {
        std::fprintf(stderr, "kbv_sandbox_bench: %s\n", error.c_str());
        return 2;
      }
      kbv::Reply r = w->call({{"op", "hello"}}, std::chrono::seconds(300));
      if (r.status != kbv::Reply::Status::ok) {
        std::fprintf(stderr, "kbv_sandbox_bench: hello failed: %s\n", r.detail.c_str());
        return 2;
      }
      (mode == kbv::sandbox::Mode::off ? worker_off : worker_strict).push_back(ms_since(t0));
      if (i == 0 && mode == kbv::sandbox::Mode::strict) std::printf("sandbox: %s\n", w->sandbox_record().dump().c_str());
      w->stop();
    }
  }
  print("spawn /bin/true, --sandbox off", spawn_off);
  print("spawn /bin/true, --sandbox strict", spawn_strict);
  print("candidate worker to hello, off", worker_off);
  print("candidate worker to hello, strict", worker_strict);
  std::printf("added per worker start: spawner %.1f ms, worker to hello %.1f ms (medians)\n",
              median(spawn_strict) - median(spawn_off), median(worker_strict) - median(worker_off));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
