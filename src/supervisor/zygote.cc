#include "supervisor/zygote.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "sandbox/sandbox.h"
#include "util/sched.h"

namespace kbv {

namespace fs = std::filesystem;

namespace {

// At most this many zygotes at once (each holds an interpreter with torch, ~600 MB resident): a
// new key past it replaces the one used least recently. An evaluation takes one (its workers start
// with the same environment and thread budget), so eight serve evaluations of eight kinds at once.
constexpr size_t kMaxZygotes = 8;

struct Zygote {
  int socket = -1;  // ours; the zygote's end is its fd 3
  int pid = -1;
  uint64_t used = 0;
  ~Zygote() {  // when replaced or evicted
    if (socket >= 0) ::close(socket);  // it ends on the closed socket
    if (pid > 0) kill_group(pid);
  }
};

// Never destroyed: at exit the kernel closes the sockets and each zygote ends on it (or on its
// death signal); a destructor run then could use util's registry after its own destruction.
std::mutex& g_mutex = *new std::mutex;
// By key_of(); a zygote is held (shared) while a fork is asked of it.
std::map<std::string, std::shared_ptr<Zygote>>& g_zygotes = *new std::map<std::string, std::shared_ptr<Zygote>>;
uint64_t g_uses = 0;

// Bytes, not JSON: an environment value need not be UTF-8 text.
std::string key_of(const std::string& python, const fs::path& worker_dir, const std::map<std::string, std::string>& env,
                   int counted_cpus) {
  std::string k = python + '\0' + worker_dir.string() + '\0';
  for (const auto& [name, value] : env)
    if (!read_after_start(name)) k += name + '=' + value + '\0';
  return k + std::to_string(counted_cpus);
}

// The zygote: no sandbox (it runs kbv's code only, and every fork applies its own), no pipes, the
// socket at fd 3, the workers' environment less what only a started worker reads, on `counted_cpus`
// CPUs (the first worker's own when it has that many).
std::unique_ptr<Zygote> start_zygote(const SpawnOptions& worker, int counted_cpus, const std::string& python,
                                     const fs::path& worker_dir, std::string& error) {
  static std::atomic<unsigned> serial{0};
  int sv[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    error = "cannot create the worker zygote's socket";
    return nullptr;
  }
  SpawnOptions o;
  // OpenMP counts the CPUs it may use as it loads (libgomp's constructor): on `counted_cpus` from
  // the start, torch's own libgomp loaded first, then the zygote back on kbv's CPUs for the rest of
  // torch's import, which would otherwise take CPUs leased to another evaluation's timing (each
  // fork pins itself: ForkRequest::cpus). A torch without its own libgomp imports on `counted_cpus`.
  std::string preamble;
  if (counted_cpus > 0) {
    o.cpus = worker.cpus.size() == static_cast<size_t>(counted_cpus) ? worker.cpus : cpu_budget(counted_cpus).cpus;
    std::string own;
    for (int c : affinity_of(0)) own += std::to_string(c) + ",";
    if (!own.empty())
      preamble =
          "import os, ctypes, importlib.util\n"
          "_t = importlib.util.find_spec('torch')\n"
          "_g = os.path.join(list(_t.submodule_search_locations)[0], 'lib', 'libgomp.so.1') if _t and "
          "_t.submodule_search_locations else ''\n"
          "try:\n"
          "    if _g and os.path.exists(_g):\n"
          "        ctypes.CDLL(_g, mode=ctypes.RTLD_GLOBAL)\n"
          "        os.sched_setaffinity(0, [" + own + "])\n"
          "except OSError:\n"
          "    pass  # the whole import on the budget's CPUs\n"
          "del _t, _g\n";
  }
  o.argv = {python, "-I", "-c",
            preamble + import_worker(worker_dir) +
                "\n"
                "forked = kbv_worker.zygote()\n"
                "if forked is None: sys.exit(0)\n"
                "import os\n"
                "role, env = forked\n"
                "os.environ.clear()\n"
                "os.environ.update(env)\n"
                "sys.argv = ['-c', role]\n"
                "sys.exit(kbv_worker.serve(role))\n"};
  for (const auto& [name, value] : worker.env_set)
    if (!read_after_start(name)) o.env_set[name] = value;
  o.env_unset = worker.env_unset;
  if (!worker.log_path.empty())
    o.log_path = worker.log_path.parent_path() / fmt::format("zygote-{}-{}.log", ::getpid(), serial++);
  o.log_cap = LogCap{};
  o.protocol_pipes = false;
  o.control_fd = sv[1];
  std::optional<Child> child = spawn(o, error);
  ::close(sv[1]);
  if (!child) {
    ::close(sv[0]);
    return nullptr;
  }
  auto z = std::make_unique<Zygote>();
  z->socket = sv[0];
  z->pid = child->pid;
  return z;
}

}  // namespace

std::string import_worker(const fs::path& worker_dir) {
  return "import sys; sys.path.insert(0, '" + worker_dir.string() + "'); import torch, kbv_worker";
}

bool read_after_start(const std::string& name) {
  // HOME, TMPDIR: Python's tempfile and torch read them when used; TORCH_EXTENSIONS_DIR, CXX: the
  // build and the candidate's load; KBV_SHM_SHARED, TORCH_EXTENSIONS_DIR: kbv_worker as serve()
  // starts (worker/cpu_sampler.h, worker/transfer.cc); CUDA_VISIBLE_DEVICES: CUDA's start, which
  // no zygote makes.
  static const std::set<std::string> kNames = {"HOME", "TMPDIR", "TORCH_EXTENSIONS_DIR", "CXX", "KBV_SHM_SHARED",
                                               "CUDA_VISIBLE_DEVICES"};
  return kNames.count(name) > 0;
}

std::optional<Child> spawn_worker(const SpawnOptions& options, int counted_cpus, const std::string& python,
                                  const fs::path& worker_dir, const std::string& role, std::string& error) {
  const std::string key = key_of(python, worker_dir, options.env_set, counted_cpus);
  // Where it runs: as an exec'd worker would, on its own CPUs or on those it inherits from us.
  const std::vector<int> runs_on = options.cpus.empty() ? affinity_of(0) : options.cpus;
  if (runs_on.empty()) return spawn(options, error);  // our own set unreadable: exec inherits it
  // "" when the request cannot be JSON (an environment value or folder that is not UTF-8): then
  // the worker is exec'd, which takes any bytes.
  bool unsendable = false;
  auto request = [&](const std::vector<std::string>& env) {
    msg::ForkRequest r;
    r.env = env;
    r.role = role;
    r.cwd = options.cwd.string();
    r.cpus = runs_on;
    if (options.sandbox) r.sandbox = sandbox::plan_to_json(*options.sandbox);
    try {
      return msg::to_json(r).dump();
    } catch (const nlohmann::json::exception&) {
      unsendable = true;
      return std::string();
    }
  };
  // Twice at most: a zygote that has ended (the thread that started it ended, and its death signal
  // with it) is replaced once; then spawn().
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Zygote> zygote;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      auto it = g_zygotes.find(key);
      if (it == g_zygotes.end()) {
        if (g_zygotes.size() >= kMaxZygotes) {
          auto oldest = std::min_element(g_zygotes.begin(), g_zygotes.end(),
                                         [](const auto& a, const auto& b) { return a.second->used < b.second->used; });
          g_zygotes.erase(oldest);
        }
        std::string why;
        std::shared_ptr<Zygote> z = start_zygote(options, counted_cpus, python, worker_dir, why);
        if (!z) break;
        it = g_zygotes.emplace(key, std::move(z)).first;
      }
      it->second->used = ++g_uses;
      zygote = it->second;
    }
    bool zygote_failed = false;
    std::optional<Child> child = spawn_forked(options, zygote->socket, request, zygote_failed, error);
    if (child) return child;
    if (!zygote_failed) return std::nullopt;  // the worker itself could not be set up: as spawn() says
    if (unsendable) break;  // the zygote is fine
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_zygotes.find(key);
    if (it != g_zygotes.end() && it->second == zygote) g_zygotes.erase(it);
  }
  return spawn(options, error);
}

}  // namespace kbv
