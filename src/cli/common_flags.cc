#include "cli/common_flags.h"

#include "cli/worker_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/parse.h"
#include "supervisor/option_table.h"
#include "supervisor/timing_phase.h"

namespace kbv::cli {
namespace fs = std::filesystem;

fs::path default_cache_dir() {
  if (const char* d = std::getenv("KBV_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kbv";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kbv";
  return fs::temp_directory_path() / "kbv-cache";
}

fs::path cache_dir_of(const std::string& flag) {
  // Absolute: the fast build's compiler wrapper and the sandbox's binds name it from other folders.
  fs::path dir = flag.empty() ? default_cache_dir() : fs::path(flag);
  std::error_code ec;
  fs::path absolute = fs::absolute(dir, ec);
  return ec ? dir : absolute.lexically_normal();
}

CommonFlags::CommonFlags() {
  for (const auto& opt : kbv::eval_option_table()) values[opt.name] = opt.fill;
}

std::string CommonFlags::value(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? std::string() : it->second;
}

namespace {

// The table's own rules as a CLI11 check, so a flag and a serve option refuse the same values
// with the same words ("--trials: must be greater than 0, got 0").
CLI::Validator table_check(const kbv::EvalOption& opt) {
  std::string shown;  // what --help shows after the type: "INT:[1 - 1024]"
  const auto low = static_cast<int64_t>(opt.low), high = static_cast<int64_t>(opt.high);
  switch (opt.kind) {
    case kbv::OptionKind::choice: shown = fmt::format("{{{}}}", fmt::join(opt.choices, ",")); break;
    case kbv::OptionKind::list: shown = fmt::format("{{{}}},...", fmt::join(opt.choices, ",")); break;
    case kbv::OptionKind::whole: shown = fmt::format("[{} - {}]", low, high); break;
    case kbv::OptionKind::positive: shown = "POSITIVE"; break;
    case kbv::OptionKind::range: shown = fmt::format("[{:g} - {:g}]", opt.low, opt.high); break;
    case kbv::OptionKind::seed: break;
  }
  return CLI::Validator(
      [&opt](std::string& text) -> std::string {
        nlohmann::json canonical;
        return kbv::parse_option_text(opt, text, canonical);
      },
      shown);
}

}  // namespace

void CommonFlags::add(CLI::App* app) {
  for (const auto& opt : kbv::eval_option_table()) {
    CLI::Option* o = app->add_option(opt.flag(), values[opt.name], opt.help)->check(table_check(opt));
    switch (opt.kind) {
      case kbv::OptionKind::whole: o->type_name("INT"); break;
      case kbv::OptionKind::seed: o->type_name("UINT"); break;
      case kbv::OptionKind::positive:
      case kbv::OptionKind::range: o->type_name("FLOAT"); break;
      case kbv::OptionKind::choice:
      case kbv::OptionKind::list: break;
    }
    if (!opt.fill.empty()) o->capture_default_str();
  }
  app->add_option("--sandbox", sandbox,
                  "confinement of the workers that run candidate code (DESIGN.md, Sandbox): strict (refuse to run "
                  "when a layer cannot be applied), best-effort (what is available, recorded) or off")
      ->check(CLI::IsMember({"strict", "best-effort", "off"}))
      ->capture_default_str();
  app->add_option("--warm-workers", warm_workers,
                  "candidate worker processes kept started ahead (Python and torch imported), each used for one candidate "
                  "only, so that a candidate's load phase skips interpreter start-up (DESIGN.md, Warm workers); 0: off. "
                  "Off under --sandbox off")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  app->add_option("--write-cap-mib", write_cap_mib,
                  "what a confined candidate's files may hold at once, in MiB: its /tmp and /dev/shm folders, what it "
                  "adds to its build folder (/tmp/kbv-ext) and the files it keeps open or mapped after unlinking them, "
                  "summed every 250 ms; past it the worker is killed "
                  "and the sample rejected (write_cap_exceeded). 0: unwatched")
      ->check(CLI::Range(uint64_t{0}, kbv::kMaxWriteCapMib))
      ->capture_default_str();
  app->add_option("--python", python, "Python with torch 2.11 for the workers (default: KBV_PYTHON or the build's)");
  app->add_option("--cache-dir", cache_dir, "build cache and worker logs (default: KBV_CACHE_DIR or ~/.cache/kbv)");
  // The rules between options (--timing-sets only with --timing-inputs sets), as kbv serve's.
  app->parse_complete_callback([this] {
    std::string error;
    if (canonical_options(error).is_null()) throw CLI::ValidationError(error);
  });
}

nlohmann::json CommonFlags::canonical_options(std::string& error) const {
  nlohmann::json c = nlohmann::json::object();
  for (const auto& opt : kbv::eval_option_table()) {
    const std::string text = value(opt.name);
    if (text.empty()) continue;
    nlohmann::json canonical;
    if (std::string e = kbv::parse_option_text(opt, text, canonical); !e.empty()) {
      error = opt.flag() + ": " + e;
      return nullptr;
    }
    c[opt.name] = std::move(canonical);
  }
  if (std::optional<kbv::OptionError> e = kbv::finish_eval_options(c)) {
    error = fmt::format("{}: {}", kbv::find_eval_option(e->key)->flag(), e->message);
    return nullptr;
  }
  return c;
}

kbv::EvalOptions CommonFlags::options() const {
  kbv::EvalOptions o;
  o.timeouts = timeouts;
  // The flags' values passed the table's own check when they were parsed (table_check); a
  // command that binds an option to a flag of its own checks it with the same rule.
  std::string error;
  nlohmann::json c = canonical_options(error);
  if (c.is_object()) kbv::apply_eval_options(c, o);
  o.cache_dir = cache_dir_of(cache_dir);
  o.worker = kbv::default_worker_config(python);
  o.worker.log_dir = o.cache_dir / "logs";
  o.worker.sandbox = *kbv::sandbox::parse_mode(sandbox);
  o.worker.warm_workers = warm_workers;
  o.worker.write_cap_bytes = write_cap_mib << 20;
  return o;
}

bool sandbox_preflight(const kbv::EvalOptions& o) {
  const kbv::sandbox::Availability a = kbv::sandbox::probe();
  if (std::string why = kbv::sandbox::refusal(o.worker.sandbox, a); !why.empty()) {
    std::fprintf(stderr, "kbv: %s\n", why.c_str());
    return false;
  }
  if (o.worker.sandbox == kbv::sandbox::Mode::best_effort) {
    std::string missing;
    for (int i = 0; i < kbv::sandbox::kLayerCount; ++i) {
      auto l = static_cast<kbv::sandbox::Layer>(i);
      if (!a.available(l))
        missing += fmt::format("{}{} ({})", missing.empty() ? "" : ", ", kbv::sandbox::layer_name(l), a.reason[l]);
    }
    if (!missing.empty()) std::fprintf(stderr, "kbv: --sandbox best-effort: running without %s\n", missing.c_str());
  }
  return true;
}

int default_build_jobs() { return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2); }

WorkerHooks worker_hooks() {
  WorkerHooks hooks;
  hooks.parse_options = [](const std::vector<std::string>& args, const WorkerHost& host,
                           std::string& error) -> std::optional<kbv::EvalOptions> {
    CLI::App parser{"a job's options", "options"};
    CommonFlags job;
    job.add(&parser);
    try {
      parser.parse(std::vector<std::string>(args.rbegin(), args.rend()));
    } catch (const CLI::ParseError& e) {
      error = e.what();
      return std::nullopt;
    }
    job.python = host.python;
    job.cache_dir = host.cache_dir;
    job.sandbox = host.sandbox;
    job.warm_workers = host.warm_workers;
    job.write_cap_mib = host.write_cap_mib;
    return job.options();
  };
  hooks.preflight = [](const kbv::EvalOptions& o) { return sandbox_preflight(o); };
  return hooks;
}

}  // namespace kbv::cli
