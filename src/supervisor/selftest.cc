#include "supervisor/selftest.h"

#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "util/fs.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void print_matrix(const std::map<std::string, std::map<std::string, int>>& matrix) {
  std::vector<std::string> cols;
  for (const char* v : kVerdicts) cols.push_back(v);
  std::string header = fmt::format("{:<15}", "expected\\got");
  for (const auto& c : cols) header += fmt::format(" {:>7.7}", c);
  std::fprintf(stderr, "%s\n", header.c_str());
  for (const auto& row : cols) {
    auto it = matrix.find(row);
    if (it == matrix.end()) continue;
    std::string line = fmt::format("{:<15}", row);
    for (const auto& c : cols) {
      auto cell = it->second.find(c);
      line += cell == it->second.end() ? fmt::format(" {:>7}", ".") : fmt::format(" {:>7}", cell->second);
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace

json run_selftest(const SelftestOptions& opt, std::string& error) {
  FileText text = read_file(opt.manifest);
  if (!text.ok) {
    error = text.error;
    return {};
  }
  json manifest = json::parse(text.text, nullptr, false);
  if (!manifest.is_array()) {
    error = opt.manifest.string() + ": not a JSON list of entries";
    return {};
  }
  fs::path root = opt.root.empty() ? fs::absolute(opt.manifest).parent_path().parent_path() : opt.root;

  // One environment per device present in the corpus; its probe worker becomes the reference.
  std::map<std::string, std::unique_ptr<ReferenceHost>> hosts;
  std::map<std::string, std::optional<Environment>> envs;
  std::map<std::string, std::string> env_errors;
  for (const auto& e : manifest) {
    std::string device = e.value("device", "cpu");
    if (!opt.device.empty() && device != opt.device) continue;
    if (envs.count(device)) continue;
    EvalOptions o = opt.eval;
    o.device = device;
    std::string err;
    std::unique_ptr<WorkerProcess> idle;
    envs[device] = probe_environment(o, err, &idle);
    if (!envs[device]) env_errors[device] = err;
    hosts[device] = std::make_unique<ReferenceHost>();
    hosts[device]->adopt(std::move(idle));
  }

  // Compile every runnable entry ahead of its evaluation, on a pool of CPU threads per device
  // (entries are then evaluated in manifest order, taking their builds in the same order).
  std::map<std::string, std::vector<BuildQueue::Item>> items;
  for (const auto& e : manifest) {
    std::string device = e.value("device", "cpu");
    if ((!opt.device.empty() && device != opt.device) || !envs[device]) continue;
    EvalOptions o = opt.eval;
    o.device = device;
    fs::path solution = root / e.value("solution", "");
    items[device].push_back({load_solution(solution), solution, o});
  }
  std::map<std::string, std::unique_ptr<BuildQueue>> queues;
  for (auto& [device, list] : items)
    queues[device] = std::make_unique<BuildQueue>(std::move(list), *envs[device], opt.build_jobs);
  std::map<std::string, size_t> taken;  // next item index per device queue

  std::map<std::string, std::map<std::string, int>> matrix;
  std::map<std::string, std::pair<int, int>> classes;  // cheat class -> (caught, total)
  json entries = json::array();
  int mismatches = 0, skipped = 0, honest_rejected = 0, cheats_passed = 0, gaps = 0;
  size_t n = manifest.size(), i = 0;
  for (const auto& e : manifest) {
    ++i;
    std::string device = e.value("device", "cpu");
    if (!opt.device.empty() && device != opt.device) continue;
    std::string expected = e.value("expected", "");
    std::string cheat = e.value("cheat", json(nullptr)).is_string() ? e["cheat"].get<std::string>() : "";
    json row = {{"problem", e.value("problem", "")}, {"solution", e.value("solution", "")}, {"device", device},
                {"expected", expected}, {"cheat", cheat.empty() ? json(nullptr) : json(cheat)}};
    if (!envs[device]) {
      ++skipped;
      row["got"] = nullptr;
      row["skipped"] = env_errors[device];
      std::fprintf(stderr, "[%zu/%zu] SKIPPED %s: %s\n", i, n, row["solution"].get<std::string>().c_str(),
                   env_errors[device].c_str());
      entries.push_back(row);
      continue;
    }
    EvalOptions o = opt.eval;
    o.device = device;
    Pair pair;
    pair.problem_path = root / e.value("problem", "");
    pair.solution_path = root / e.value("solution", "");
    ReferenceHost& host = *hosts[device];
    BuildResult built = queues[device]->get(taken[device]++);
    json record = evaluate_pair(pair, o, *envs[device], host, &built);
    std::string got = record.value("verdict", "");
    if (got == "interrupted") break;
    row["got"] = got;
    row["message"] = record.value("message", "");
    bool match = got == expected;
    if (e.contains("fails_only") && got == "wrong_output") {
      std::set<std::string> want, failed;
      for (const auto& d : e["fails_only"]) want.insert(d.get<std::string>());
      for (const auto& d : record["distributions"])
        if (!d.value("passed", true)) failed.insert(d.value("distribution", ""));
      if (want != failed) {
        match = false;
        row["failed_distributions"] = failed;
      }
    }
    // An entry whose defence is not built yet is a known gap: shown, counted apart, not hidden.
    std::string pending = e.value("pending", "");
    if (!pending.empty()) row["pending"] = pending;
    bool gap = !match && !pending.empty();
    row["match"] = match;
    matrix[expected][got]++;
    if (gap) ++gaps;
    else if (!match) ++mismatches;
    if (expected == "correct" && got != "correct") ++honest_rejected;
    if (!cheat.empty()) {
      auto& c = classes[cheat];
      c.second++;
      if (got != "correct") c.first++;
      else ++cheats_passed;
    }
    std::fprintf(stderr, "[%zu/%zu] %-4s %-60s %-13s %s\n", i, n, device.c_str(),
                 row["solution"].get<std::string>().c_str(), got.c_str(),
                 match ? "" : gap ? fmt::format("KNOWN GAP (expected {}; {})", expected, pending).c_str()
                             : fmt::format("MISMATCH (expected {})", expected).c_str());
    entries.push_back(row);
  }
  std::fprintf(stderr, "\n");
  print_matrix(matrix);
  if (!classes.empty()) {
    std::string line = "cheat classes caught:";
    for (const auto& [c, v] : classes) line += fmt::format(" {} {}/{}", c, v.first, v.second);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fprintf(stderr,
               "%d mismatch(es), %d known gap(s) (defence pending), %d honest solution(s) rejected, %d cheat(s) "
               "judged correct, %d skipped\n",
               mismatches, gaps, honest_rejected, cheats_passed, skipped);
  json classes_json = json::object();
  for (const auto& [c, v] : classes) classes_json[c] = {{"caught", v.first}, {"total", v.second}};
  json devices = json::object();
  for (const auto& [d, env] : envs) devices[d] = env ? json(env->device_name) : json(nullptr);
  return json{{"entries", entries},   {"matrix", matrix},     {"classes", classes_json},
              {"mismatches", mismatches}, {"known_gaps", gaps}, {"honest_rejected", honest_rejected},
              {"cheats_judged_correct", cheats_passed}, {"skipped", skipped}, {"devices", devices}};
}

}  // namespace kbv
