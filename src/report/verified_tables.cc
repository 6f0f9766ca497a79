// KernelBench-Verified's table shape (docs/METRICS.md, "The verified table"), and the list of
// problems left out of the denominator.
#include <set>

#include <fmt/format.h>

#include "report/render.h"
#include "report/verified.h"

namespace kbv {
namespace {


const char* kNone = "—";

std::set<int> levels_of(const std::vector<VerifiedTable>& tables) {
  std::set<int> levels;
  for (const auto& t : tables)
    for (const auto& s : t.scopes)
      if (s.level != 0) levels.insert(s.level);
  return levels;
}

const VerifiedScope* scope_at(const VerifiedTable& t, int level) {
  for (const auto& s : t.scopes)
    if (s.level == level) return &s;
  return nullptr;
}

Cell verified_speedup_cell(const VerifiedScope& s) {
  if (!s.speedup) return text_cell(s.winners == 0 ? "none (0 correct)" : "none", "na");
  return number_cell(format_speedup(*s.speedup), *s.speedup, *s.speedup >= 1.0 ? "good" : "bad");
}
Cell correctness_cell(const VerifiedScope& s) {
  std::string t = format_count_rate(s.winners, s.problems);
  if (s.correct_untimed) t += fmt::format(" · {} correct untimed", s.correct_untimed);
  return number_cell(t, s.correctness);
}
Cell fast1_cell(const VerifiedScope& s) {
  return number_cell(format_count_rate(s.fast_count[kFast1], s.problems), s.fast_p[kFast1]);
}
Cell mem_eff_cell(const VerifiedScope& s) {
  if (s.winners == 0) return text_cell("none (0 correct)", "na");
  if (!s.mem_eff) return text_cell("not measured", "na");
  return number_cell(format_speedup(*s.mem_eff), *s.mem_eff, *s.mem_eff >= 1.0 ? "good" : "bad");
}
Cell mem_share_cell(const VerifiedScope& s) {
  if (s.winners > 0 && s.memory_measured == 0) return text_cell("not measured", "na");
  return number_cell(format_count_rate(s.mem_efficient, s.problems), s.mem_efficient_share);
}

std::vector<VerifiedTable> tables_of(const ReportInput& input) {
  std::vector<VerifiedTable> out;
  for (const auto& run : input.runs) out.push_back(verified_table(run));
  return out;
}

// One row per run, the columns per level: the paper's speed and memory tables.
Table per_level_table(const ReportInput& input, std::string id, std::string title, bool with_gate,
                      const std::vector<const char*>& columns, std::vector<Cell> (*cells)(const VerifiedScope&)) {
  const std::vector<VerifiedTable> tables = tables_of(input);
  Table t;
  t.id = std::move(id);
  t.title = std::move(title);
  t.sortable = true;
  t.header = {"run"};
  if (with_gate) t.header.push_back("gate");
  const std::set<int> levels = levels_of(tables);
  for (int l : levels)
    for (const char* c : columns) t.header.push_back(fmt::format("L{} {}", l, c));
  for (size_t i = 0; i < tables.size(); ++i) {
    std::vector<Cell> row = {text_cell(input.runs[i].name)};
    if (with_gate) row.push_back(text_cell(tables[i].gate));
    for (int l : levels) {
      const VerifiedScope* s = scope_at(tables[i], l);
      if (!s) {
        row.insert(row.end(), columns.size(), text_cell(kNone, "na"));
        continue;
      }
      std::vector<Cell> c = cells(*s);
      row.insert(row.end(), c.begin(), c.end());
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

Table verified_speed_table(const ReportInput& input) {
  return per_level_table(input, "verified-speed",
                         "Verified speedup results (KernelBench-Verified's table: best-of-n per problem)", true,
                         {"Speedup", "Correctness", "Fast@1"}, [](const VerifiedScope& s) {
                           return std::vector<Cell>{verified_speedup_cell(s), correctness_cell(s), fast1_cell(s)};
                         });
}

Table verified_memory_table(const ReportInput& input) {
  return per_level_table(input, "verified-memory",
                         "Memory efficiency results (the speed winner's peak memory against the baseline's)", false,
                         {"Mem Eff", "Mem Eff%"},
                         [](const VerifiedScope& s) { return std::vector<Cell>{mem_eff_cell(s), mem_share_cell(s)}; });
}

Table verified_overall_table(const ReportInput& input) {
  const std::vector<VerifiedTable> tables = tables_of(input);
  Table t;
  t.id = "verified-overall";
  t.title = "Overall verified results (all levels pooled)";
  t.sortable = true;
  t.header = {"run", "problems", "Speedup", "Correctness", "Fast@1", "Mem Eff", "Mem Eff%"};
  for (size_t p = 0; p < kFastPThresholds.size(); ++p)
    if (p != kFast1) t.header.push_back(fmt::format("fast_{:g}", kFastPThresholds[p]));
  for (size_t i = 0; i < tables.size(); ++i) {
    const VerifiedScope* s = scope_at(tables[i], 0);
    if (!s) continue;
    std::vector<Cell> row = {text_cell(input.runs[i].name),
                             number_cell(std::to_string(s->problems), s->problems),
                             verified_speedup_cell(*s),
                             correctness_cell(*s),
                             fast1_cell(*s),
                             mem_eff_cell(*s),
                             mem_share_cell(*s)};
    for (size_t p = 0; p < kFastPThresholds.size(); ++p)
      if (p != kFast1) row.push_back(number_cell(format_count_rate(s->fast_count[p], s->problems), s->fast_p[p]));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table excluded_table(const RunSummary& run, size_t index) {
  Table t;
  t.id = fmt::format("excluded-{}", index);
  t.title = "Excluded from the denominator";
  t.header = {"level", "problem", "kind", "why", "source"};
  for (const auto& e : run.excluded)
    t.rows.push_back({number_cell(std::to_string(e.level), e.level),
                      Cell{e.name.empty() ? std::to_string(e.id) : e.name, static_cast<double>(e.id), "", true},
                      text_cell(e.kind), text_cell(e.reason), text_cell(e.source)});
  return t;
}

}  // namespace kbv
