#include "supervisor/session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

#include "proto/channel.h"
#include "util/interrupt.h"
#include "util/subprocess.h"

namespace kbv {

WorkerFailure worker_failure(const Reply& r) {
  WorkerFailure f;
  switch (r.status) {
    case Reply::Status::ok:
    case Reply::Status::failed: f.status = WorkerFailure::Status::failed; break;
    case Reply::Status::timeout: f.status = WorkerFailure::Status::timeout; break;
    case Reply::Status::died: f.status = WorkerFailure::Status::died; break;
    case Reply::Status::channel_error: f.status = WorkerFailure::Status::channel_error; break;
  }
  if (r.body.is_object()) {
    f.kind = r.body.value("kind", "");
    f.message = r.body.value("message", "");
    if (auto it = r.body.find("traceback"); it != r.body.end() && it->is_string()) f.traceback = it->get<std::string>();
  }
  f.detail = r.detail;
  f.interrupted = interrupted();
  return f;
}
namespace fs = std::filesystem;

namespace {

bool has_worker_module(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind("kbv_worker", 0) == 0 && entry.path().extension() == ".so")
      return true;
  return false;
}

// Removes shared-memory buffers a dead worker left behind (/dev/shm/kbv-<pid>-*).
void remove_stale_shm(int pid) {
  std::error_code ec;
  std::string prefix = fmt::format("kbv-{}-", pid);
  for (const auto& entry : fs::directory_iterator("/dev/shm", ec))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
}

}  // namespace

WorkerConfig default_worker_config(const std::string& python_flag) {
  WorkerConfig c;
  if (!python_flag.empty())
    c.python = python_flag;
  else if (const char* p = std::getenv("KBV_PYTHON"); p && *p)
    c.python = p;
  else
    c.python = KBV_DEFAULT_PYTHON;
  std::error_code ec;
  fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (const char* d = std::getenv("KBV_WORKER_DIR"); d && *d)
    c.worker_dir = d;
  else if (!ec && has_worker_module(exe_dir))
    c.worker_dir = exe_dir;
  else
    c.worker_dir = KBV_WORKER_DIR;
  return c;
}

std::unique_ptr<WorkerProcess> WorkerProcess::start(const std::string& role, const WorkerConfig& config,
                                                    const std::map<std::string, std::string>& env,
                                                    std::string& error) {
  static std::atomic<unsigned> serial{0};
  std::error_code ec;
  fs::create_directories(config.log_dir, ec);
  SpawnOptions o;
  // The folder goes into a Python string literal: refuse paths that would break it.
  if (config.worker_dir.string().find('\'') != std::string::npos) {
    error = "the worker folder path contains a quote: " + config.worker_dir.string();
    return nullptr;
  }
  std::string script = "import sys; sys.path.insert(0, '" + config.worker_dir.string() +
           "'); import torch, kbv_worker; sys.exit(kbv_worker.serve(sys.argv[1]))";
  o.argv = {config.python, "-I", "-c", script, role};
  o.env_set = config.env;
  for (const auto& [k, v] : env) o.env_set[k] = v;
  o.env_set["PYTHONDONTWRITEBYTECODE"] = "1";
  o.env_set["PYTHONUNBUFFERED"] = "1";
  o.log_path = config.log_dir / fmt::format("{}-{}-{}.log", role, getpid(), serial++);
  std::optional<Child> child = spawn(o, error);
  if (!child) return nullptr;
  auto w = std::unique_ptr<WorkerProcess>(new WorkerProcess());
  w->pid_ = child->pid;
  w->to_ = child->to_child;
  w->from_ = child->from_child;
  w->role_ = role;
  w->log_path_ = o.log_path;
  return w;
}

WorkerProcess::~WorkerProcess() { stop(); }

std::string WorkerProcess::died_detail() {
  std::string how = "ended";
  if (auto st = wait_for(pid_, std::chrono::milliseconds(2000)))
    how = st->describe();
  else
    how = kill_group(pid_).describe();
  end_group();
  std::string tail = tail_file(log_path_, 2000);
  std::string d = fmt::format("the {} worker {}", role_, how);
  ended_ = fmt::format("it {} during an earlier request (log: {})", how, log_path_.string());
  if (!tail.empty()) d += fmt::format("; last output ({}):\n{}", log_path_.string(), tail);
  return d;
}

Reply WorkerProcess::call(const nlohmann::json& request, std::chrono::milliseconds timeout) {
  return call(request, timeout, nullptr);
}

Reply WorkerProcess::call(const nlohmann::json& request, std::chrono::milliseconds timeout, const AskHandler& asked) {
  Reply r;
  if (pid_ <= 0) {
    r.status = Reply::Status::died;
    r.detail = "the " + role_ + " worker is not running" + (ended_.empty() ? "" : ": " + ended_);
    return r;
  }
  std::string werr = write_message(to_, request);
  if (!werr.empty()) {
    r.status = Reply::Status::died;
    r.detail = died_detail();
    return r;
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::now() + timeout;
  ReadResult rr;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    rr = read_message(from_, std::max(left, std::chrono::milliseconds(0)));
    if (rr.status != ReadResult::Status::ok || !rr.message.is_object() || !rr.message.contains("op")) break;
    if (!asked) {
      rr.status = ReadResult::Status::error;
      rr.error = fmt::format("the worker asked {} during op '{}', which takes no questions",
                             rr.message["op"].dump().substr(0, 40), request.value("op", ""));
      break;
    }
    auto t0 = Clock::now();
    nlohmann::json answer = asked(rr.message);
    deadline += Clock::now() - t0;
    if (!write_message(to_, answer).empty()) {
      r.status = Reply::Status::died;
      r.detail = died_detail();
      return r;
    }
  }
  switch (rr.status) {
    case ReadResult::Status::ok:
      r.body = std::move(rr.message);
      r.status = r.body.value("ok", false) ? Reply::Status::ok : Reply::Status::failed;
      return r;
    case ReadResult::Status::timeout: {
      kill_group(pid_);
      end_group();
      r.status = Reply::Status::timeout;
      r.detail = fmt::format("no answer from the {} worker within {:.1f} s (op '{}'); its process group was killed",
                             role_, timeout.count() / 1000.0, request.value("op", ""));
      ended_ = fmt::format("it was killed after no answer within {:.1f} s to op '{}'", timeout.count() / 1000.0,
                           request.value("op", ""));
      return r;
    }
    case ReadResult::Status::eof:
      r.status = Reply::Status::died;
      r.detail = died_detail();
      return r;
    case ReadResult::Status::error:
      r.status = Reply::Status::channel_error;
      r.detail = fmt::format("unreadable reply from the {} worker: {}", role_, rr.error);
      ended_ = fmt::format("it was killed after an unreadable reply to op '{}': {}", request.value("op", ""), rr.error);
      kill_group(pid_);
      end_group();
      return r;
  }
  return r;
}

void WorkerProcess::end_group() {
  // The worker may have left children (compilers, a candidate's threads or processes): those in
  // its group go with the group, those that left it were adopted by kbv once their parents ended.
  ::kill(-pid_, SIGKILL);
  for (Stray& s : kill_strays(pid_)) strays_.push_back(std::move(s));
  remove_stale_shm(pid_);
  pid_ = -1;
}

void WorkerProcess::stop() {
  if (pid_ > 0) {
    write_message(to_, {{"op", "exit"}});
    if (!wait_for(pid_, std::chrono::milliseconds(3000))) kill_group(pid_);
    end_group();
    ended_ = "it was stopped";
  }
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  to_ = from_ = -1;
}

}  // namespace kbv
