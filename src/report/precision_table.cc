// FP32 and BF16 (and FP16) numbers of one model side by side (docs/PRECISION.md): KernelBench-
// Verified reports both, and they differ a lot (level-2 speedups above 1x appear only in BF16).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "record/record.h"
#include "report/render.h"

namespace kbv {

Table precision_table(const ReportInput& input) {
  Table t;
  t.id = "precision";
  t.title = "Precisions side by side";
  t.sortable = true;
  const std::string b = input.baseline;
  // model -> precision -> run (the first run of that model in that precision)
  std::map<std::string, std::map<std::string, const RunSummary*>> by_model;
  std::vector<std::string> order;  // models in input order
  for (const auto& run : input.runs) {
    const std::string model = run.model.empty() ? run.name : run.model;
    if (!by_model.count(model)) order.push_back(model);
    by_model[model].try_emplace(run.precision, &run);
  }
  std::vector<std::string> present;
  for (const char* p : kPrecisions)
    for (const auto& [model, runs] : by_model)
      if (runs.size() > 1 && runs.count(p) && std::find(present.begin(), present.end(), p) == present.end())
        present.push_back(p);
  t.header = {"model"};
  for (const auto& p : present)
    for (const char* h : {"correct", "fast_1", "geomean"})
      t.header.push_back(fmt::format("{} ({})", h, p));
  for (const auto& model : order) {
    const auto& runs = by_model[model];
    if (runs.size() < 2) continue;
    std::vector<Cell> row = {Cell{model, std::nullopt, "", false}};
    for (const auto& p : present) {
      auto it = runs.find(p);
      if (it == runs.end() || it->second->scopes.empty()) {
        for (int i = 0; i < 3; ++i) row.push_back(Cell{"not run", std::nullopt, "na"});
        continue;
      }
      const ScopeSummary& s = it->second->scopes.back();
      const GateSummary& g = headline_gate(s) == Gate::hidden ? s.hidden : s.standard;
      row.push_back(Cell{format_count_rate(g.correct, s.slots), g.correct_rate, ""});
      auto sp = g.speed.find(b);
      if (sp == g.speed.end() || !sp->second.measured) {
        row.push_back(Cell{"not measured", std::nullopt, "na"});
        row.push_back(Cell{"not measured", std::nullopt, "na"});
        continue;
      }
      const SpeedMetrics& m = sp->second;
      row.push_back(Cell{format_fast_p(m, kFast1), m.fast_p[kFast1], ""});
      if (m.geomean_correct)
        row.push_back(Cell{format_speedup(*m.geomean_correct), *m.geomean_correct, *m.geomean_correct >= 1.0 ? "good" : "bad"});
      else
        row.push_back(Cell{m.correct == 0 ? "none (0 correct)" : "none", std::nullopt, "na"});
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace kbv
