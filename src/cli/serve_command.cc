#include "cli/serve_command.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/common_flags.h"
#include "cli/output.h"
#include "cli/parse.h"
#include "service/serve.h"

namespace kbv::cli {
namespace fs = std::filesystem;

namespace {

struct Flags {
  service::ServeOptions serve;
  std::vector<std::string> problems;
  std::string token_file, gpus, device, python, cache_dir, sandbox = "strict";
  int warm_workers = kDefaultWarmWorkers;
  uint64_t write_cap_mib = kDefaultWriteCapBytes >> 20;
  Timeouts timeouts;
};

}  // namespace

std::unique_ptr<ServeCommand> add_serve_command(CLI::App& app) {
  auto cmd = std::make_unique<ServeCommand>();
  auto f = std::make_shared<Flags>();
  auto* s = app.add_subcommand("serve", "the evaluation API (HTTP/JSON) over a job queue, with its own workers "
                                        "(docs/SERVICE.md)");
  cmd->app = s;
  s->add_option("--listen", f->serve.listen, "HOST:PORT to serve on (port 0: any free port, printed)")
      ->capture_default_str();
  s->add_option("--queue", f->serve.queue_url,
                "the job queue: sqlite:PATH or postgresql://USER@HOST:PORT/DB (default: sqlite:CACHE/serve/queue.db)");
  s->add_option("--problems", f->problems, "a KernelBench dataset root whose problems clients name (repeatable)");
  s->add_option("--token-file", f->token_file,
                "file whose first line is the bearer token clients send (mode 600; at least 16 characters)")
      ->required();
  s->add_option("--workers", f->serve.workers, "evaluations at once in this process (0: none; kbv workers evaluate)")
      ->capture_default_str()
      ->check(kNonNegative);
  s->add_option("--gpus", f->gpus, "GPU indices, one worker each, e.g. 0,1 (instead of --workers)");
  s->add_option("--build-jobs", f->serve.build_jobs,
                "candidates compiled at once ahead of their evaluation, in this process's cache (0: each worker "
                "compiles its own job; CUDA jobs need TORCH_CUDA_ARCH_LIST, docs/SERVICE.md)")
      ->capture_default_str()
      ->check(kNonNegative);
  s->add_option("--device", f->device, "cuda or cpu: the device of evaluations that do not name one (default: cuda "
                                       "when a GPU is visible)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  s->add_option("--max-body-bytes", f->serve.max_body_bytes, "largest request body taken (larger: 413)")
      ->capture_default_str()
      ->check(kPositive);
  s->add_option("--lease-seconds", f->serve.lease_s, "a job's lease, renewed while it runs; an expired one goes back "
                                                     "to the queue")
      ->capture_default_str()
      ->check(kPositive);
  s->add_flag("--allow-problem-source", f->serve.allow_problem_source,
              "take problems as source from clients, not only by name: their code runs unconfined in the reference "
              "worker as kbv's user, so only for clients trusted with this host");
  s->add_option("--python", f->python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or the build's)");
  s->add_option("--cache-dir", f->cache_dir, "build cache, worker logs, job files (default: KBV_CACHE_DIR or "
                                             "~/.cache/kbv)");
  s->add_option("--sandbox", f->sandbox, "confinement of the workers that run candidate code: strict, best-effort or off")
      ->check(CLI::IsMember({"strict", "best-effort", "off"}))
      ->capture_default_str();
  s->add_option("--warm-workers", f->warm_workers,
                  "pre-started candidate workers kept ready by each of serve's own workers (as kbv eval --warm-workers)")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  s->add_option("--write-cap-mib", f->write_cap_mib,
                "what a confined candidate's files may hold at once, in MiB (as kbv eval --write-cap-mib)")
      ->check(CLI::Range(uint64_t{0}, kbv::kMaxWriteCapMib))
      ->capture_default_str();
  s->add_option("--timeout-build", f->timeouts.build_s, "seconds to compile a candidate (clients may ask for less)")
      ->capture_default_str()
      ->check(kPositive);
  s->add_option("--timeout-load", f->timeouts.load_s, "seconds to load a problem or construct ModelNew (at most)")
      ->capture_default_str()
      ->check(kPositive);
  s->add_option("--timeout-call", f->timeouts.call_s, "seconds for one forward call (at most)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->run = [f]() -> int {
    service::ServeOptions o = f->serve;
    for (const auto& p : f->problems) o.problems.emplace_back(p);
    o.token_file = f->token_file;
    for (size_t pos = 0; !f->gpus.empty() && pos <= f->gpus.size();) {
      size_t comma = f->gpus.find(',', pos);
      std::string item = f->gpus.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 3) {
        std::fprintf(stderr, "kbv serve: --gpus: '%s' is not a GPU index (kbv serve --help)\n", item.c_str());
        return kExitUsage;
      }
      o.gpus.push_back(std::stoi(item));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    o.eval.device = f->device;
    o.eval.timeouts = f->timeouts;
    o.eval.cache_dir = cache_dir_of(f->cache_dir);
    o.eval.worker = default_worker_config(f->python);
    o.eval.worker.log_dir = o.eval.cache_dir / "logs";
    o.eval.worker.sandbox = *sandbox::parse_mode(f->sandbox);
    o.eval.worker.warm_workers = f->warm_workers;
    o.eval.worker.write_cap_bytes = f->write_cap_mib << 20;
    if (std::string why = sandbox::refusal(o.eval.worker.sandbox, sandbox::probe()); !why.empty()) {
      std::fprintf(stderr, "kbv serve: %s\n", why.c_str());
      return kExitUsage;
    }
    return finish("kbv serve", service::serve(o, printer("kbv serve")));
  };
  return cmd;
}

}  // namespace kbv::cli
