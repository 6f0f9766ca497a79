#include "supervisor/baseline_command.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "formats/baseline.h"
#include "supervisor/timing_phase.h"
#include "util/fs.h"
#include "util/host_load.h"
#include "util/interrupt.h"
#include "util/sched.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Outcome import_baselines(const BaselineCommandOptions& o, const Discovery& dataset, const Environment& env,
                         const Notify& notify) {
  FileText t = read_file(o.import_file);
  if (!t.ok) return Outcome::fail(Status::input_error, t.error);
  json j = json::parse(t.text, nullptr, false);
  if (!j.is_object())
    return Outcome::fail(Status::input_error,
                         o.import_file + ": not a JSON object {\"level1\": {\"1_X.py\": {...}}}");
  std::map<std::pair<int, std::string>, const ProblemRef*> by_name;
  for (const auto& p : dataset.problems) by_name[{p.level, p.name}] = &p;
  int imported = 0, failed = 0;
  for (const auto& [level_key, entries] : j.items()) {
    std::optional<int> level_of = baseline_level_key(level_key);
    if (!level_of || !entries.is_object()) {
      info(notify, fmt::format("{}: key '{}' is not levelN with an object of problems; skipped", o.import_file,
                               level_key));
      ++failed;
      continue;
    }
    const int level = *level_of;
    for (const auto& [name, e] : entries.items()) {
      auto it = by_name.find({level, name});
      if (it == by_name.end()) {
        info(notify, fmt::format("{}: {}/{} is not a problem under {}; skipped", o.import_file, level_key, name,
                                 o.problems_dir.string()));
        ++failed;
        continue;
      }
      if (!baseline_entry_timed(e)) {
        info(notify, fmt::format("{}: {}/{} has no numeric \"mean\"; skipped", o.import_file, level_key, name));
        ++failed;
        continue;
      }
      // not a string (null): unknown, as when absent (json::value would throw)
      std::string hardware = e.contains("hardware") && e["hardware"].is_string() ? e["hardware"].get<std::string>() : "";
      if (!hardware.empty() && hardware != env.device_name) {
        info(notify, fmt::format("{}: {}/{} was measured on {}, this device is {}; skipped", o.import_file,
                                 level_key, name, hardware, env.device_name));
        ++failed;
        continue;
      }
      FileText text = read_file(it->second->path);
      if (!text.ok) {
        info(notify, text.error);
        ++failed;
        continue;
      }
      Stats s = baseline_entry_stats(e);
      json entry = {{"mode", o.mode},        {"stats", s.to_json()},      {"imported_from", o.import_file},
                    {"imported", e},         {"level", level},            {"problem_file", name},
                    {"device_name", env.device_name}, {"torch_version", env.torch_version}};
      std::string key = baseline_key(text.text, o.eval, env, o.mode);
      if (std::string err = save_baseline(o.eval, key, entry); !err.empty()) {
        info(notify, err);
        ++failed;
        continue;
      }
      ++imported;
    }
  }
  info(notify, fmt::format("imported {} {} baseline(s) for {}, {} skipped", imported, o.mode, env.device_name, failed));
  return failed ? Outcome::fail(Status::incomplete, "") : Outcome::done();
}

Outcome export_baselines(const BaselineCommandOptions& o, const Discovery& dataset, const Environment& env,
                         const Notify& notify) {
  json out = json::object();
  int exported = 0, missing = 0;
  for (const auto& p : dataset.problems) {
    FileText text = read_file(p.path);
    if (!text.ok) continue;
    std::optional<json> entry = load_baseline(o.eval, baseline_key(text.text, o.eval, env, o.mode));
    if (!entry) {
      ++missing;
      continue;
    }
    add_baseline_entry(out, p.level, p.name, (*entry)["stats"], env.device_name, env.device == "cuda" ? "cuda:0" : "cpu");
    ++exported;
  }
  // Nothing cached: no file. `{}` is not a baseline file (KernelBench-Verified's reader and kbv's
  // own import both want a level<N> object), and an empty one would replace a good one.
  if (exported == 0)
    return Outcome::fail(Status::input_error,
                         fmt::format("no {} baseline of {} is cached for the {} problem(s) under {} (cache {}): run "
                                     "`kbv baseline` first; nothing was written",
                                     o.mode, env.device_name, missing, o.problems_dir.string(),
                                     o.eval.cache_dir.string()));
  std::string err = o.export_file == "-" ? "" : write_file_atomic(o.export_file, out.dump(2) + "\n");
  if (o.export_file == "-") data(notify, out.dump(2) + "\n");
  if (!err.empty()) return Outcome::fail(Status::input_error, err);
  info(notify, fmt::format("exported {} {} baseline(s) of {}; {} problem(s) have none (run kbv baseline first)",
                           exported, o.mode, env.device_name, missing));
  return Outcome::done();
}

}  // namespace

Outcome baseline_command(const BaselineCommandOptions& o, const Notify& notify) {
  Discovery dataset = discover_dataset(o.problems_dir, o.level);
  if (!dataset.error.empty()) return Outcome::fail(Status::input_error, dataset.error);
  for (const auto& w : dataset.warnings) warn(notify, w);
  EvalOptions eval = o.eval;
  std::string error;
  std::unique_ptr<WorkerProcess> idle;
  std::optional<Environment> env = probe_environment(eval, error, &idle);
  if (!env) return Outcome::fail(Status::input_error, error);
  eval.device = env->device;
  BaselineCommandOptions opts = o;
  opts.eval = eval;
  opts.eval.cpu = resolve_cpu_budget(eval);  // the budget that keys the cached baselines
  if (!o.import_file.empty()) return import_baselines(opts, dataset, *env, notify);
  if (!o.export_file.empty()) return export_baselines(opts, dataset, *env, notify);

  ReferenceHost reference;
  // The CPUs its baselines run on, held for the whole command (util/sched.h CpuLease): its CPU
  // budget, resolved once.
  CpuLease lease(eval.protocol.timing.cpu_threads);
  eval.cpu = lease.budget();
  reference.adopt(std::move(idle));
  begin_items(notify, dataset.problems.size());
  int failed = 0, measured = 0, cached = 0, busy = 0;
  for (size_t i = 0; i < dataset.problems.size() && !interrupted(); ++i) {
    const ProblemRef& p = dataset.problems[i];
    item_started(notify, i, fmt::format("level {} {}", p.level, p.name));
    FileText text = read_file(p.path);
    std::vector<std::string> todo;
    for (const auto& mode : eval.protocol.timing.baselines)
      if (text.ok && !load_baseline(eval, baseline_key(text.text, eval, *env, mode))) todo.push_back(mode);
    std::string line, problem_error = text.ok ? "" : text.error;
    msg::LoadProblemReply load_reply;
    FailureKind failure;
    WorkerProcess* ref = nullptr;
    if (problem_error.empty() && !todo.empty()) {
      ref = reference.get(p.path, eval, load_reply, failure);
      if (!ref) problem_error = failure.message;
      // CPU thread parity: the same budget as an evaluation's baselines (docs/TIMING.md).
      if (ref && env->device != "cuda")
        if (std::string e = ref->pin_cpus(eval.cpu.cpus); !e.empty()) {
          problem_error = "pinning the reference worker to the CPU thread budget: " + e;
          ref = nullptr;
        }
    }
    if (ref && !draw_timing_inputs(*ref, eval, error)) {
      problem_error = error;
      reference.reset();
      ref = nullptr;
    }
    std::vector<std::string> parts;
    for (const auto& mode : eval.protocol.timing.baselines) {
      std::string key = text.ok ? baseline_key(text.text, eval, *env, mode) : "";
      if (text.ok && std::find(todo.begin(), todo.end(), mode) == todo.end()) {
        ++cached;
        parts.push_back(fmt::format("{} {:.4g} ms (cached)", mode, (*load_baseline(eval, key))["stats"].value("median_ms", 0.0)));
        continue;
      }
      if (!ref) continue;
      std::optional<json> entry = measure_baseline(*ref, eval, mode, env->device != "cuda", error);
      if (!entry) {
        problem_error = error;
        continue;
      }
      (*entry)["level"] = p.level;
      (*entry)["problem_file"] = p.name;
      (*entry)["device_name"] = env->device_name;
      (*entry)["torch_version"] = env->torch_version;
      ++measured;
      if (!baseline_cacheable(*entry)) {  // timed beside busy cores (util/host_load.h): shown, not kept
        ++busy;
        parts.push_back(fmt::format("{} {:.4g} ms (not cached: other processes used {:.2f} cores)", mode,
                                    (*entry)["stats"].value("median_ms", 0.0),
                                    (*entry)["stats"].value("host_other_cores", 0.0)));
        continue;
      }
      if (std::string e = save_baseline(eval, key, *entry); !e.empty()) problem_error = e;
      parts.push_back(fmt::format("{} {:.4g} ms", mode, (*entry)["stats"].value("median_ms", 0.0)));
    }
    if (ref) ref->call(msg::to_json(msg::TimeReleaseRequest{}), std::chrono::milliseconds(60000));
    if (!problem_error.empty()) ++failed;
    std::string joined;
    for (const auto& s : parts) joined += (joined.empty() ? "" : ", ") + s;
    item_done(notify, i, problem_error.empty(),
                      fmt::format("level {} {}: {}{}{}", p.level, p.name, joined, joined.empty() || problem_error.empty() ? "" : "; ",
                                  problem_error.empty() ? "" : "failed: " + problem_error.substr(0, 200)));
  }
  end_items(notify);
  info(notify, fmt::format("baselines on {}: {} measured, {} cached, {} problem(s) failed; cache {}", env->device_name,
                           measured, cached, failed, (eval.cache_dir / "baselines").string()));
  if (busy > 0)
    info(notify, fmt::format("{} baseline(s) not cached: other processes used {:.2f} or more CPU cores while they "
                             "were timed (docs/TIMING.md); run again on an idle host",
                             busy, host_busy_cores()));
  if (interrupted()) return Outcome::fail(Status::interrupted, "");
  return failed ? Outcome::fail(Status::incomplete, "") : Outcome::done();
}

}  // namespace kbv
