#include "service/serve.h"

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "service/api.h"
#include "service/pool.h"
#include "service/server.h"
#include "util/fs.h"
#include "util/interrupt.h"

namespace kbv::service {
namespace fs = std::filesystem;

std::string read_token(const fs::path& path, std::string& error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = fmt::format("--token-file {}: no such file", path.string());
    return "";
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    error = fmt::format("--token-file {}: readable by other users (mode {:o}); chmod 600 it", path.string(),
                        st.st_mode & 0777);
    return "";
  }
  FileText text = read_file(path);
  if (!text.ok) {
    error = "--token-file " + text.error;
    return "";
  }
  std::string token = text.text.substr(0, text.text.find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.erase(0, 1);
  if (token.size() < 16) {
    error = fmt::format("--token-file {}: the token (its first line) has {} characters; use at least 16 (e.g. "
                        "`openssl rand -hex 32 > {}`)",
                        path.string(), token.size(), path.string());
    return "";
  }
  return token;
}

Outcome serve(const ServeOptions& o, const Notify& notify) {
  ServerConfig sc;
  if (std::string e = parse_listen(o.listen, sc.host, sc.port); !e.empty()) return Outcome::fail(Status::input_error, e);
  std::string error;
  sc.token = read_token(o.token_file, error);
  if (sc.token.empty()) return Outcome::fail(Status::input_error, error);
  sc.max_body_bytes = o.max_body_bytes;

  ProblemIndex problems = index_problems(o.problems, error);
  if (!error.empty()) return Outcome::fail(Status::input_error, error);
  for (const auto& w : problems.warnings) warn(notify, w);

  std::string url = o.queue_url.empty() ? "sqlite:" + (o.eval.cache_dir / "serve" / "queue.db").string() : o.queue_url;
  if (url.rfind("sqlite:", 0) == 0) {
    std::error_code ec;
    fs::create_directories(fs::path(url.substr(7)).parent_path(), ec);
  }
  // One connection for the HTTP threads and the workers: a Queue serialises its own calls.
  std::unique_ptr<queue::Queue> opened = queue::Queue::open(url, error);
  if (!opened) return Outcome::fail(Status::input_error, "--queue " + url + ": " + error);
  queue::Queue& queue = *opened;

  // The device evaluations default to: --device, else what a worker sees.
  EvalOptions base = o.eval;
  if (base.device.empty()) {
    std::optional<Environment> env = probe_environment(base, error);
    if (!env) return Outcome::fail(Status::internal, error);
    base.device = env->device;
  }
  ApiConfig ac;
  ac.limits.device = base.device;
  ac.limits.max_timeouts = base.timeouts;
  ac.max_source_bytes = o.max_body_bytes;
  ac.allow_problem_source = o.allow_problem_source;
  Metrics metrics;
  Api api(queue, std::move(problems), ac, metrics);

  PoolConfig pc;
  pc.workers = o.workers;
  pc.gpus = o.gpus;
  pc.builders = o.build_jobs;
  pc.lease_s = o.lease_s;
  pc.base = base;
  pc.scratch = o.eval.cache_dir / "serve";
  pc.problems = o.problems;
  WorkerPool pool(queue, pc, metrics, [&api] { api.notify(); }, notify);

  HttpServer server(api, metrics, sc);
  int port = server.bind(error);
  if (port < 0) return Outcome::fail(Status::input_error, "--listen: " + error);
  pool.start();
  const int n = pc.evaluators();
  info(notify, fmt::format("listening on http://{}:{} (queue {}, {} problem{} by name, {} worker{} on {}{})", sc.host,
                           port, url, api.problem_count(), api.problem_count() == 1 ? "" : "s", n, n == 1 ? "" : "s",
                           base.device,
                           o.build_jobs > 0 ? fmt::format(", {} compiling ahead", o.build_jobs) : std::string()));
  std::thread watcher([&server] {
    while (!interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  server.run();
  watcher.join();
  info(notify, "stopping: finishing the evaluations in flight (interrupted ones go back to the queue)");
  pool.stop();
  return Outcome::fail(Status::interrupted, "stopped");
}

}  // namespace kbv::service
