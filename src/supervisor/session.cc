#include "supervisor/session.h"
#include "supervisor/zygote.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "proto/channel.h"
#include "util/interrupt.h"
#include "util/sched.h"
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
  if (r.status == Reply::Status::failed) {
    // The failure message (proto/messages.h); a malformed one says so as a protocol_error.
    msg::Failure m = msg::failure_of(r.body);
    f.kind = m.kind;
    f.message = m.message;
    if (!m.traceback.empty()) f.traceback = m.traceback;
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

// How worker/transfer.cc names the shared-memory buffers of process `pid`: kbv-<pid>-...
std::string shm_prefix(int pid) { return fmt::format("kbv-{}-", pid); }

// Removes shared-memory buffers a dead worker left behind (/dev/shm/kbv-<pid>-*).
void remove_stale_shm(int pid) {
  std::error_code ec;
  const std::string prefix = shm_prefix(pid);
  for (const auto& entry : fs::directory_iterator("/dev/shm", ec))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
}

// Every entry under `dir`, as paths relative to it (links not followed), parents before children.
std::set<std::string> entries_under(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    out.insert(it->path().lexically_relative(dir).string());
  return out;
}

// The sandbox's folders belong to uid 65534 when kbv is root (the confined workers run as it).
void give_to_nobody(const fs::path& path, bool recursive) {
  if (::geteuid() != 0) return;
  ::lchown(path.c_str(), 65534, 65534);
  std::error_code ec;
  if (recursive)
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      ::lchown(it->path().c_str(), 65534, 65534);
}

// Sandbox folders of kbv processes that are gone (killed before they could remove them):
// /dev/shm/kbv-sbx-<pid>-<n> and <scratch root>/<role>-<pid>-<n>. Once per kbv process.
void sweep_dead_sandbox_folders(const fs::path& scratch_root) {
  static std::once_flag once;
  std::call_once(once, [&] {
    auto dead = [](const std::string& name, size_t pid_at) {
      int pid = std::atoi(name.c_str() + pid_at);
      return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    };
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind("kbv-sbx-", 0) == 0 && dead(name, 8)) fs::remove_all(e.path(), ec);
    }
    for (const auto& e : fs::directory_iterator(scratch_root, ec)) {
      std::string name = e.path().filename().string();
      size_t dash = name.find('-');
      if (dash != std::string::npos && dead(name, dash + 1)) fs::remove_all(e.path(), ec);
    }
  });
}

nlohmann::json sandbox_off_record() {
  nlohmann::json layers = nlohmann::json::object();
  for (int i = 0; i < sandbox::kLayerCount; ++i) layers[sandbox::layer_name(static_cast<sandbox::Layer>(i))] = "off";
  return {{"mode", "off"}, {"layers", layers}};
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
  // KBV_ZYGOTE=0: every worker exec'd and importing torch itself (supervisor/zygote.h), as before.
  if (const char* z = std::getenv("KBV_ZYGOTE"); z && std::string(z) == "0") c.zygote = false;
  return c;
}

std::unique_ptr<WorkerProcess> WorkerProcess::start(const std::string& role, const WorkerConfig& config,
                                                    const std::map<std::string, std::string>& env,
                                                    std::string& error, const WorkerTarget& target) {
  static std::atomic<unsigned> serial{0};
  std::error_code ec;
  fs::create_directories(config.log_dir, ec);
  SpawnOptions o;
  // The folder goes into a Python string literal: refuse paths that would break it.
  if (config.worker_dir.string().find('\'') != std::string::npos) {
    error = "the worker folder path contains a quote: " + config.worker_dir.string();
    return nullptr;
  }
  std::string script = import_worker(config.worker_dir) + "; sys.exit(kbv_worker.serve(sys.argv[1]))";
  o.argv = {config.python, "-I", "-c", script, role};
  o.env_set = config.env;
  for (const auto& [k, v] : env) o.env_set[k] = v;
  o.env_set["PYTHONDONTWRITEBYTECODE"] = "1";
  o.env_set["PYTHONUNBUFFERED"] = "1";
  // The same fixed allocator parameters in every worker (docs/TIMING.md, "Draws away from the
  // candidate"): glibc's adaptive mmap and trim thresholds made a call's fresh output cost one
  // worker ~100 us more than the other, by its heap's history. The CPU memory figure trims
  // explicitly (worker/memory.cc).
  o.env_set["GLIBC_TUNABLES"] = kWorkerMallocTunables;
  const unsigned n = serial++;
  o.log_path = config.log_dir / fmt::format("{}-{}-{}.log", role, getpid(), n);
  o.log_cap = LogCap{};  // a worker's output is bounded (16 MiB, the last 1 MiB kept): util/log_pump.h
  o.cpus = target.start_cpus;
  if (target.threads > 0) {
    // The budget for the worker's own OpenMP and MKL teams too (their default is every CPU the
    // process saw as they loaded); its affinity bounds them either way.
    o.env_set["OMP_NUM_THREADS"] = std::to_string(target.threads);
    o.env_set["MKL_NUM_THREADS"] = std::to_string(target.threads);
  }
  const int counted_cpus = target.threads > 0 ? target.threads : static_cast<int>(target.start_cpus.size());
  auto w = std::unique_ptr<WorkerProcess>(new WorkerProcess());
  w->role_ = role;
  w->log_path_ = o.log_path;
  w->sandbox_ = sandbox_off_record();

  // The sandbox (src/sandbox): folders made and handed over, the plan made, all before fork.
  sandbox::Plan plan;
  sandbox::Availability availability;
  if (config.sandbox != sandbox::Mode::off) {
    availability = sandbox::probe();
    const bool confine = role != "reference";
    const fs::path scratch_root =
        config.scratch_dir.empty() ? config.log_dir.parent_path() / "scratch" : config.scratch_dir;
    sweep_dead_sandbox_folders(scratch_root);
    sandbox::Paths paths;
    paths.read.push_back(config.worker_dir.string());
    if (!target.solution.empty()) paths.read.push_back(fs::absolute(target.solution, ec).string());
    for (const auto& r : target.read) paths.read.push_back(fs::absolute(r, ec).string());
    if (confine) {
      w->scratch_ = scratch_root / fmt::format("{}-{}-{}", role, getpid(), n);
      fs::remove_all(w->scratch_, ec);
      fs::create_directories(w->scratch_, ec);
      fs::permissions(w->scratch_, fs::perms::owner_all, ec);
      give_to_nobody(w->scratch_, false);
      paths.scratch = w->scratch_.string();
      // The build folder, at one path in every worker (/tmp/kbv-ext) so that torch's up-to-date check
      // of a build made by another worker holds.
      if (target.warm) {
        // Pre-started: its /tmp/kbv-ext is this folder of its scratch, filled at hand-over.
        fs::create_directories(w->scratch_ / "kbv-ext", ec);
        give_to_nobody(w->scratch_ / "kbv-ext", false);
        o.env_set["TORCH_EXTENSIONS_DIR"] = "/tmp/kbv-ext";
      } else if (auto it = o.env_set.find("TORCH_EXTENSIONS_DIR"); it != o.env_set.end()) {
        paths.ext = it->second;
        fs::create_directories(paths.ext, ec);
        if (role == "candidate") {  // a build worker's additions are the build
          w->ext_dir_ = paths.ext;
          w->ext_before_ = entries_under(paths.ext);
        }
        fs::create_directories(w->scratch_ / "kbv-ext", ec);
        give_to_nobody(paths.ext, true);
        it->second = "/tmp/kbv-ext";
      }
      o.env_set["HOME"] = "/tmp";
      o.env_set["TMPDIR"] = "/tmp";
    }
    if (role == "reference") {
      // Its tensors' files, shared with its candidates only; readable by them (KBV_SHM_SHARED).
      w->shm_dir_ = fs::path("/dev/shm") / fmt::format("kbv-sbx-{}-{}", getpid(), n);
      fs::remove_all(w->shm_dir_, ec);
      fs::create_directory(w->shm_dir_, ec);
      fs::permissions(w->shm_dir_, fs::perms::owner_all, ec);
      give_to_nobody(w->shm_dir_, false);
      w->owns_shm_ = true;
      o.env_set["KBV_SHM_SHARED"] = "1";
    } else if (target.reference && !target.reference->shm_dir().empty()) {
      w->shm_dir_ = target.reference->shm_dir();
      w->shm_owner_ = target.reference->pid();
      // A pre-started one makes no file there until it is handed a candidate; one stopped before
      // (its ping failed in WarmPool::settle) must not sweep the running candidate's files.
      w->sweeps_shared_shm_ = !target.warm;
    } else if (confine) {
      w->shm_dir_ = w->scratch_ / "shm";
      fs::create_directories(w->shm_dir_, ec);
      give_to_nobody(w->shm_dir_, false);
    }
    paths.shm = w->shm_dir_.string();
    plan = sandbox::make_plan(config.sandbox, role, availability, config.python, paths, error);
    if (!error.empty()) {
      w->remove_sandbox_files();
      return nullptr;
    }
    if (!plan.want[sandbox::kMountNs] && w->owns_shm_) {  // best-effort without a mount namespace
      w->remove_sandbox_files();
      w->shm_dir_.clear();
      o.env_set.erase("KBV_SHM_SHARED");
    }
    o.sandbox = &plan;
  }

  std::optional<Child> child =
      config.zygote ? spawn_worker(o, counted_cpus, config.python, config.worker_dir, role, error) : spawn(o, error);
  if (!child) {
    w->remove_sandbox_files();
    return nullptr;
  }
  w->pid_ = child->pid;
  w->program_pid_ = child->program_pid;
  w->to_ = child->to_child;
  w->from_ = child->from_child;
  if (o.sandbox) {
    std::string refused;
    w->sandbox_ = sandbox::verify(plan, availability, child->layers, child->program_pid, refused);
    if (child->layers.err[sandbox::kPidNs] == 0) {
      char link[128] = {};
      std::string path = fmt::format("/proc/{}/ns/pid_for_children", child->pid);
      if (::readlink(path.c_str(), link, sizeof link - 1) > 0) w->pid_ns_ = link;
    }
    if (!refused.empty()) {
      error = fmt::format("the {} worker: {}", role, refused);
      return nullptr;  // the destructor kills it and removes its folders
    }
    if (role == "candidate" && config.write_cap_bytes > 0 && !w->scratch_.empty()) {
      WriteWatch::Target t;
      t.folders = {w->scratch_, w->shm_dir_, w->ext_dir_};  // every folder it can write
      t.group = w->pid_;
      t.pid_ns = w->pid_ns_;
      t.reference = w->shm_owner_;
      t.cap = config.write_cap_bytes;
      w->watch_ = std::make_unique<WriteWatch>(std::move(t));
    }
  }
  return w;
}

WorkerProcess::~WorkerProcess() { stop(); }

std::string WorkerProcess::hand_build(const fs::path& extensions_dir) {
  if (scratch_.empty()) return "the " + role_ + " worker has no scratch folder";
  sweeps_shared_shm_ = true;  // a candidate's from now on: its files in the shared folder go with it
  const fs::path into = scratch_ / "kbv-ext";
  std::error_code ec;
  if (!fs::exists(extensions_dir, ec)) return "";  // nothing built (a solution without an extension)
  auto it = fs::recursive_directory_iterator(extensions_dir, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path to = into / it->path().lexically_relative(extensions_dir);
    if (it->is_symlink(ec)) {
      fs::copy_symlink(it->path(), to, ec);
    } else if (it->is_directory(ec)) {
      fs::create_directories(to, ec);
    } else if (it->path().filename() != "lock" && it->is_regular_file(ec)) {
      fs::copy_file(it->path(), to, fs::copy_options::overwrite_existing, ec);
      if (!ec) fs::last_write_time(to, fs::last_write_time(it->path(), ec), ec);
    }
    if (ec) break;
  }
  if (ec) return fmt::format("copying {} into {}: {}", extensions_dir.string(), into.string(), ec.message());
  give_to_nobody(into, true);
  return "";
}

std::string WorkerProcess::pin_cpus(const std::vector<int>& cpus) {
  if (pid_ <= 0) return "the " + role_ + " worker is not running";
  std::string error = pin_group(pid_, cpus);
  if (error.empty()) cpus_ = cpus;
  if (error.empty() && watch_) watch_->avoid_cpus(cpus);
  return error;
}

std::string WorkerProcess::unpin_cpus() {
  std::string error = pin_cpus(affinity_of(0));
  if (error.empty()) cpus_.clear();
  if (watch_) watch_->avoid_cpus({});
  return error;
}

std::string WorkerProcess::died_detail() {
  std::string how = "ended";
  if (auto st = wait_for(pid_, std::chrono::milliseconds(2000)))
    how = st->describe();
  else
    how = kill_group(pid_).describe();
  end_group();
  if (!write_tripped_.empty()) how += " (" + write_tripped_ + ")";
  drain_log(log_path_);  // its last words may still be in the pipe
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
    if (rr.status != ReadResult::Status::ok || !rr.message.is_object() || msg::op_text(rr.message).empty()) break;
    if (!asked) {
      rr.status = ReadResult::Status::error;
      rr.error = fmt::format("the worker asked \"{}\" during op '{}', which takes no questions",
                             msg::op_text(rr.message), msg::op_text(request));
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
      r.status = msg::reply_ok(r.body) ? Reply::Status::ok : Reply::Status::failed;
      return r;
    case ReadResult::Status::timeout: {
      note_namespace_strays();
      kill_group(pid_);
      end_group();
      r.status = Reply::Status::timeout;
      r.detail = fmt::format("no answer from the {} worker within {:.1f} s (op '{}'); its process group was killed",
                             role_, timeout.count() / 1000.0, msg::op_text(request));
      ended_ = fmt::format("it was killed after no answer within {:.1f} s to op '{}'", timeout.count() / 1000.0,
                           msg::op_text(request));
      return r;
    }
    case ReadResult::Status::eof:
      r.status = Reply::Status::died;
      r.detail = died_detail();
      return r;
    case ReadResult::Status::error:
      r.status = Reply::Status::channel_error;
      r.detail = fmt::format("unreadable reply from the {} worker: {}", role_, rr.error);
      ended_ = fmt::format("it was killed after an unreadable reply to op '{}': {}", msg::op_text(request), rr.error);
      kill_group(pid_);
      end_group();
      return r;
  }
  return r;
}

void WorkerProcess::note_namespace_strays() {
  if (pid_ns_.empty() || pid_ <= 0) return;
  for (Stray& s : namespace_strays(pid_, pid_ns_)) strays_.push_back(std::move(s));
}

void WorkerProcess::remove_sandbox_files() {
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
  if (owns_shm_) {
    fs::remove_all(shm_dir_, ec);
  } else if (shm_owner_ > 0 && sweeps_shared_shm_) {
    // A candidate's files in its reference's folder: everything not the reference's. A name is not
    // proof (the candidate owns the folder and can name a file as the reference's: a plant that
    // outlived it, examples/level1/19_ReLU/cpu_shm_plant.py): the reference's are those it maps.
    const std::string prefix = shm_prefix(shm_owner_);
    const auto mapped = shm_mapped_bytes(shm_owner_);
    for (const auto& entry : fs::directory_iterator(shm_dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0 || (mapped && !mapped->count(name))) fs::remove(entry.path(), ec);
    }
  }
  // What a candidate added to the build folder it was bound writable (the build's cache entry, which
  // outlives it): its files there held up to the write cap, and would stay on the host's disk.
  // torch's lock file is left to whoever holds it.
  if (!ext_dir_.empty()) {
    for (const std::string& added : entries_under(ext_dir_))
      if (!ext_before_.count(added) && fs::path(added).filename() != "lock") fs::remove_all(ext_dir_ / added, ec);
    ext_dir_.clear();
  }
  scratch_.clear();
  owns_shm_ = false;
}

void WorkerProcess::stop_watch() {
  if (!watch_) return;
  watch_->stop();
  if (write_tripped_.empty()) write_tripped_ = watch_->tripped();
  watch_.reset();
}

void WorkerProcess::end_group() {
  stop_watch();  // before the group's pid is forgotten and can be reused
  // The worker may have left children (compilers, a candidate's threads or processes): those in
  // its group go with the group, those that left it were adopted by kbv once their parents ended.
  ::kill(-pid_, SIGKILL);
  for (Stray& s : kill_strays(pid_)) strays_.push_back(std::move(s));
  remove_stale_shm(pid_);
  remove_sandbox_files();
  frozen_.clear();  // killed: their pids may be reused
  pid_ = program_pid_ = -1;
}

int WorkerProcess::freeze() {
  if (pid_ <= 0) return 0;
  std::vector<int> more = stop_processes(pid_, pid_ns_);
  frozen_.insert(frozen_.end(), more.begin(), more.end());
  return static_cast<int>(more.size());
}

void WorkerProcess::thaw() {
  continue_processes(frozen_, pid_);
  frozen_.clear();
}

void WorkerProcess::stop() {
  if (pid_ > 0) {
    note_namespace_strays();  // before the namespace ends and takes them with it
    write_message(to_, msg::to_json(msg::ExitRequest{}));
    if (!wait_for(pid_, std::chrono::milliseconds(3000))) kill_group(pid_);
    end_group();
    ended_ = "it was stopped";
  }
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  to_ = from_ = -1;
}

}  // namespace kbv
