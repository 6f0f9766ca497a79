// The parts of the HTML report (report/render_html.cc) that its plots (report/html_plots.cc)
// share with the page: escaping and the SVG plots the page places. Internal to src/report/.
#pragma once
#include <string>

#include <fmt/format.h>

#include "report/render.h"

namespace kbv::html {

// Text made safe for HTML content and attribute values.
std::string esc(const std::string& s);

// Speedup axes span the data (whole octaves, 1× always included) up to 2^±kCap; a value beyond
// goes into a separate, labelled overflow bar (histograms) or is drawn at the edge and said so.
constexpr int kCap = 12;
// "8×", "1/4×": the label of the tick at 2^exponent.
std::string tick_label(int exponent);

// Speedup distribution of one level: log2 histogram, correct samples stacked under those that
// passed only the standard check. Each bar's tooltip lists its samples and their speedups.
std::string speedup_panel(const RunSummary& run, const ScopeSummary& scope, const std::string& id);
// Memory ratio against speedup, one point per correct sample with both, 1× lines dashed.
std::string memory_panel(const RunSummary& run, const ScopeSummary& scope, const std::string& id);

// One panel per level, each its own SVG in a grid that follows the page's width.
template <class Panel>
std::string panels(const RunSummary& run, const std::string& id, Panel panel) {
  std::string out = fmt::format("<div class=\"plots\" id=\"{}\">", esc(id));
  for (const auto& s : run.scopes)
    if (s.level != 0) out += panel(run, s, fmt::format("{}-level{}", id, s.level));
  return out + "</div>";
}

// The runs' colours, as the comparison plots draw them.
std::string run_key(const ReportInput& input);
// fast_p as a curve over the threshold p: the share of all slots that are correct with a speedup
// above p, one line per run; dots at KernelBench's thresholds.
std::string fast_p_svg(const ReportInput& input);
// The speedup distributions of several runs on one axis: per run, the share of its slots in each
// bin, drawn as an outline in the run's colour.
std::string overlay_svg(const ReportInput& input);
// A run's verdicts per level as stacked bars.
std::string verdict_svg(const RunSummary& run, const std::string& id);

}  // namespace kbv::html
