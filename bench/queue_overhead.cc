// The job queue's own cost (docs/results/2026-12-05-queue.md): per job, submit -> lease -> job_of
// -> complete with a no-op evaluation, one process, one call after the other; then throughput of
// 1, 2, 4 worker processes (the library's worker loop, no-op executor) draining the same number
// of jobs. Each measurement gets a fresh queue: a new SQLite file, or a new PostgreSQL database
// created on the server of the URL given.
//   kbv_queue_bench sqlite:/tmp/dir | postgresql://user@host:port/db  [JOBS] [WORKERS,...]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "queue/worker_loop.h"

#ifdef KBV_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace {

using namespace kbv::queue;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// A fresh queue URL for measurement `name`.
std::string fresh_url(const std::string& base, const std::string& name, std::string& error) {
  if (base.rfind("sqlite:", 0) == 0) {
    std::filesystem::path dir(base.substr(7));
    std::filesystem::create_directories(dir);
    std::filesystem::remove(dir / (name + ".db"));
    std::filesystem::remove(dir / (name + ".db-wal"));
    std::filesystem::remove(dir / (name + ".db-shm"));
    return "sqlite:" + (dir / (name + ".db")).string();
  }
#ifdef KBV_HAVE_LIBPQ
  PGconn* conn = PQconnectdb(base.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
    PQfinish(conn);
    return "";
  }
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  const std::string db = "kbv_bench_" + name;
  PQclear(PQexec(conn, ("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)").c_str()));
  PGresult* res = PQexec(conn, ("CREATE DATABASE " + db).c_str());
  if (PQresultStatus(res) != PGRES_COMMAND_OK) error = PQresultErrorMessage(res);
  PQclear(res);
  PQfinish(conn);
  const size_t slash = base.find('/', base.find("://") + 3);
  return (slash == std::string::npos ? base : base.substr(0, slash)) + "/" + db;
#else
  error = "built without libpq";
  return "";
#endif
}

JobSpec spec(int i) {
  JobSpec s;
  s.problem_name = "level1/" + std::to_string(i % 100) + "_Bench";
  s.problem_source = std::string(2000, 'p') + std::to_string(i);  // a problem file's size
  s.solution_source = std::string(4000, 's');                     // a candidate's size
  s.options = {{"device", "cuda"}, {"trials", 5}};
  return s;
}

struct Percentiles {
  double median = 0, p90 = 0, p99 = 0, mean = 0;
};
Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]; };
  p.median = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s sqlite:/DIR | postgresql://... [JOBS] [WORKERS,...]\n", argv[0]);
    return 2;
  }
  const std::string base = argv[1];
  const int jobs = argc > 2 ? std::atoi(argv[2]) : 1000;
  std::vector<int> worker_counts;
  for (std::string list = argc > 3 ? argv[3] : "1,2,4"; !list.empty();) {
    const size_t comma = list.find(',');
    worker_counts.push_back(std::atoi(list.substr(0, comma).c_str()));
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
  }
  const std::string engine = base.rfind("sqlite:", 0) == 0 ? "sqlite" : "postgresql";
  std::string error;

  // 1. Per-job overhead, one call after the other.
  const std::string url = fresh_url(base, "overhead", error);
  auto q = url.empty() ? nullptr : Queue::open(url, error);
  if (!q) {
    std::fprintf(stderr, "bench: %s\n", error.c_str());
    return 1;
  }
  std::vector<double> submit_ms, lease_ms, job_of_ms, complete_ms, total_ms;
  for (int i = 0; i < jobs; ++i) {
    const auto t0 = Clock::now();
    auto id = q->submit(spec(i), error);
    const double s = ms_since(t0);
    auto t1 = Clock::now();
    auto lease = q->lease("bench", 60, error);
    const double l = ms_since(t1);
    t1 = Clock::now();
    auto job = lease ? q->job_of(*lease, error) : std::nullopt;
    const double j = ms_since(t1);
    t1 = Clock::now();
    const bool ok = job && q->complete(*lease, {{"verdict", "correct"}, {"runtime_ms", 0.1}}, error);
    const double c = ms_since(t1);
    if (!id || !lease || !job || !ok) {
      std::fprintf(stderr, "bench: job %d: %s\n", i, error.empty() ? "lost" : error.c_str());
      return 1;
    }
    submit_ms.push_back(s);
    lease_ms.push_back(l);
    job_of_ms.push_back(j);
    complete_ms.push_back(c);
    total_ms.push_back(ms_since(t0));
  }
  std::printf("engine %s, %d jobs, one process\n", engine.c_str(), jobs);
  std::printf("%-22s %9s %9s %9s %9s\n", "per job (ms)", "median", "p90", "p99", "mean");
  auto row = [](const char* name, const std::vector<double>& v) {
    Percentiles p = percentiles(v);
    std::printf("%-22s %9.3f %9.3f %9.3f %9.3f\n", name, p.median, p.p90, p.p99, p.mean);
  };
  row("submit", submit_ms);
  row("lease", lease_ms);
  row("job_of", job_of_ms);
  row("complete", complete_ms);
  row("submit->complete", total_ms);
  q.reset();

  // 2. Throughput of W worker processes draining `jobs` no-op jobs.
  std::printf("\n%-8s %10s %12s %10s\n", "workers", "seconds", "jobs/s", "ratio");
  double one = 0;
  for (int w : worker_counts) {
    const std::string wurl = fresh_url(base, "workers" + std::to_string(w), error);
    auto wq = wurl.empty() ? nullptr : Queue::open(wurl, error);
    if (!wq) {
      std::fprintf(stderr, "bench: %s\n", error.c_str());
      return 1;
    }
    for (int i = 0; i < jobs; ++i) {
      if (!wq->submit(spec(i), error)) {
        std::fprintf(stderr, "bench: %s\n", error.c_str());
        return 1;
      }
    }
    const auto t0 = Clock::now();
    std::vector<pid_t> pids;
    for (int k = 0; k < w; ++k) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        std::string e;
        auto mine = Queue::open(wurl, e);
        if (!mine) _exit(3);
        LoopOptions o;
        o.worker = "bench-" + std::to_string(k);
        o.until_empty = true;
        LoopStats st = run_worker_loop(*mine, [](const Job&) {
          return ExecResult{ExecResult::Kind::done, {{"verdict", "correct"}}, ""};
        }, o);
        _exit(st.db_errors == 0 ? 0 : 4);
      }
      pids.push_back(pid);
    }
    bool ok = true;
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    const double seconds = ms_since(t0) / 1000;
    auto counts = wq->counts(error);
    if (!ok || !counts || counts->done != jobs) {
      std::fprintf(stderr, "bench: %d workers: not every job done (%s)\n", w, error.c_str());
      return 1;
    }
    const double rate = jobs / seconds;
    if (w == worker_counts.front()) one = rate / w;
    std::printf("%-8d %10.3f %12.1f %10.2f\n", w, seconds, rate, one > 0 ? rate / one : 0.0);
  }
  return 0;
}
