// `kbv serve`: the evaluation API (HTTP/JSON) over a job queue, with this process's own workers
// (docs/SERVICE.md). Runs until interrupted (SIGINT/SIGTERM).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "supervisor/run.h"
#include "util/outcome.h"

namespace kbv::service {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  std::string queue_url;                       // empty: sqlite:<cache_dir>/serve/queue.db
  std::vector<std::filesystem::path> problems;  // dataset roots: problems by name
  std::filesystem::path token_file;
  int workers = 1;                             // in-process workers (0: the API only; kbv workers evaluate)
  std::vector<int> gpus;                       // one worker per GPU instead of --workers
  int build_jobs = 0;                          // builders compiling queued candidates ahead (PoolConfig::builders)
  size_t max_body_bytes = 8u << 20;
  double lease_s = 60;
  bool allow_problem_source = false;          // see ApiConfig::allow_problem_source
  EvalOptions eval;                            // the server's own: cache, Python, sandbox, timeouts (the maxima)
};

// The bearer token in `path`: its first line, trimmed; "" with `error` when the file cannot be read,
// is empty, or is readable by other users.
std::string read_token(const std::filesystem::path& path, std::string& error);

Outcome serve(const ServeOptions& options, const Notify& notify);

}  // namespace kbv::service
