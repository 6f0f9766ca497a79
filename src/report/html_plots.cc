// The HTML report's plots (report/render_html.cc places them): inline SVG, no external resources.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/html_plots.h"

namespace kbv::html {
namespace {

const char* verdict_color(const std::string& v) {
  if (v == "correct") return "#2e7d32";
  if (v == "wrong_output") return "#ef6c00";
  if (v == "flaky") return "#ffb74d";
  if (v == "rejected") return "#6a1b9a";
  if (v == "compile_error") return "#546e7a";
  if (v == "runtime_error") return "#c62828";
  if (v == "timeout") return "#f9a825";
  if (v == "crashed") return "#4e342e";
  if (v == "problem_error") return "#0277bd";
  if (v == "missing") return "#bdbdbd";
  return "#9e9e9e";
}

// --- plots -----------------------------------------------------------------------------------
// Every plot is its own SVG with a viewBox and no fixed size: CSS makes it as wide as its column
// of the page (a grid that puts one to four plots side by side with the page's width), so the
// plots grow with a wide screen and shrink on a laptop instead of sitting at 300 px.

constexpr double kPanelW = 640, kPanelH = 330, kLeft = 52, kRight = 16, kTop = 30, kBottom = 46;

const char* const kRunColors[] = {"#1e88e5", "#e53935", "#43a047", "#8e24aa", "#fb8c00", "#00897b", "#6d4c41", "#3949ab"};
const char* run_color(size_t i) { return kRunColors[i % std::size(kRunColors)]; }

}  // namespace

std::string tick_label(int exponent) {
  if (exponent >= 0) return fmt::format("{}×", 1LL << exponent);
  return fmt::format("1/{}×", 1LL << -exponent);
}

namespace {

// A log2 axis over whole octaves [lo, hi] (1× inside), capped at ±kCap.
struct LogAxis {
  int lo = -1, hi = 1;
  bool under = false, over = false;  // some value lies below lo / above hi (only at the caps)
  int per_octave() const { return hi - lo <= 8 ? 2 : 1; }
  int tick_step() const { return hi - lo <= 10 ? 1 : hi - lo <= 20 ? 2 : 4; }
};

LogAxis log_axis(const std::vector<double>& log2_values) {
  LogAxis a;
  for (double v : log2_values) {
    a.lo = std::min(a.lo, static_cast<int>(std::floor(v)));
    // A value exactly on an octave gets the octave above it, so it sits inside a bin.
    a.hi = std::max(a.hi, static_cast<int>(std::floor(v)) + 1);
  }
  if (a.lo < -kCap) a.lo = -kCap, a.under = true;
  if (a.hi > kCap) a.hi = kCap, a.over = true;
  return a;
}

struct Frame {
  double x0, w, y0, h;  // plotting area
};

// The frame, the x ticks of `axis` (plus the overflow slots' labels) and the x axis title.
// `slot_w`: the width of the overflow slots at either end (0: none).
std::string x_axis(const Frame& f, const LogAxis& a, double under_w, double over_w, const std::string& title) {
  std::string out = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", f.x0, f.y0,
                                f.w, f.h);
  const double inner = f.w - under_w - over_w;
  auto x_of = [&](double e) { return f.x0 + under_w + inner * (e - a.lo) / (a.hi - a.lo); };
  for (int e = a.lo; e <= a.hi; ++e)
    if ((e - a.lo) % a.tick_step() == 0 || e == 0)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>", x_of(e), f.y0 + f.h + 15,
                         tick_label(e));
  if (under_w > 0)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">&lt;{}</text>", f.x0 + under_w / 2,
                       f.y0 + f.h + 15, tick_label(a.lo));
  if (over_w > 0)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">&gt;{}</text>", f.x0 + f.w - over_w / 2,
                       f.y0 + f.h + 15, tick_label(a.hi));
  out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"one\"/>", x_of(0), f.y0,
                     f.y0 + f.h);
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">{}</text>", f.x0 + f.w / 2, kPanelH - 6, esc(title));
  return out;
}

std::string svg_open(const std::string& id, const std::string& label, double height = kPanelH) {
  return fmt::format("<svg id=\"{}\" class=\"plot\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {}\">", esc(id),
                     esc(label), kPanelW, height);
}

// A panel of the runs-overlaid plots: its svg opened with its title over the frame; `empty`
// gets the closed panel saying nothing was timed when the plot has no value to draw.
std::string overlay_panel(const std::string& id, const std::string& label, const std::string& title, bool empty) {
  std::string out = svg_open(id, label);
  out += fmt::format("<text x=\"{}\" y=\"18\" class=\"ptitle\">{}</text>", kLeft, title);
  if (!empty) return out;
  const Frame f{kLeft, kPanelW - kLeft - kRight, kTop, kPanelH - kTop - kBottom};
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", f.x0, f.y0, f.w, f.h);
  return out + fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">no correct sample was timed</text></svg>\n",
                           f.x0 + f.w / 2, f.y0 + f.h / 2);
}

std::string sample_label(const SampleView& v) {
  return fmt::format("L{} {} s{}", v.level, v.problem.empty() ? std::to_string(v.problem_id) : v.problem, v.sample_id);
}

// Histogram bins over a LogAxis: index 0 the underflow slot (when any), then per_octave bins per
// octave, then the overflow slot (when any).
struct Bins {
  LogAxis axis;
  int inner = 0;  // bins inside the axis
  int bin_of(double log2v) const {
    if (log2v < axis.lo) return -1;
    if (log2v >= axis.hi) return inner;
    return std::clamp(static_cast<int>(std::floor((log2v - axis.lo) * axis.per_octave())), 0, inner - 1);
  }
};
Bins bins_for(const LogAxis& a) { return Bins{a, (a.hi - a.lo) * a.per_octave()}; }

}  // namespace

// Speedup distribution of one level: log2 histogram, correct samples stacked under those that
// passed only the standard check. Each bar's tooltip lists its samples and their speedups.
std::string speedup_panel(const RunSummary& run, const ScopeSummary& scope, const std::string& id) {
  const Gate gate = headline_gate(scope);
  struct Item {
    double log2v;
    bool pass;
    std::string label;
  };
  std::vector<Item> items;
  int correct = 0;
  for (const auto& v : run.samples) {
    if (v.level != scope.level) continue;
    const bool pass = v.passes(gate);
    const bool std_only = gate == Gate::hidden && !pass && v.passes(Gate::standard);
    if (!pass && !std_only) continue;
    if (pass) ++correct;
    auto it = v.speedup.find(run.baseline);
    if (it == v.speedup.end() || !(it->second > 0)) continue;
    items.push_back({std::log2(it->second), pass, sample_label(v) + " " + format_speedup(it->second)});
  }
  std::string out = svg_open(id, "speedup distribution, " + scope.name);
  out += fmt::format("<text x=\"{}\" y=\"18\" class=\"ptitle\">{}</text>", kLeft, esc(scope.name));
  const Frame f{kLeft, kPanelW - kLeft - kRight, kTop, kPanelH - kTop - kBottom};
  if (items.empty()) {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", f.x0, f.y0, f.w, f.h);
    const char* why = correct > 0 ? "not measured" : "no correct samples";
    return out + fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">{}</text></svg>\n", f.x0 + f.w / 2,
                             f.y0 + f.h / 2, why);
  }
  std::vector<double> values;
  for (const auto& i : items) values.push_back(i.log2v);
  const Bins b = bins_for(log_axis(values));
  const int slots = b.inner + 2;  // [under, inner..., over]
  std::vector<int> pass(slots, 0), std_only(slots, 0);
  std::vector<std::vector<std::string>> labels(slots);
  for (const auto& i : items) {
    const int k = b.bin_of(i.log2v) + 1;
    (i.pass ? pass : std_only)[k]++;
    labels[k].push_back(i.label + (i.pass ? "" : " (standard check only)"));
  }
  const double under_w = b.axis.under ? f.w / (b.inner + 2) : 0, over_w = b.axis.over ? f.w / (b.inner + 2) : 0;
  const double bw = (f.w - under_w - over_w) / b.inner;
  int max_count = 1;
  for (int k = 0; k < slots; ++k) max_count = std::max(max_count, pass[k] + std_only[k]);
  out += x_axis(f, b.axis, under_w, over_w, fmt::format("speedup vs {} (log scale)", run.baseline));
  for (int k = 0; k < slots; ++k) {
    if (pass[k] + std_only[k] == 0) continue;
    const bool is_under = k == 0, is_over = k == slots - 1;
    const double x = is_under ? f.x0 : is_over ? f.x0 + f.w - over_w : f.x0 + under_w + (k - 1) * bw;
    const double width = is_under ? under_w : is_over ? over_w : bw;
    std::string range;
    if (is_under)
      range = "below " + tick_label(b.axis.lo);
    else if (is_over)
      range = "above " + tick_label(b.axis.hi);
    else {
      // Bin edges on whole octaves read as the axis does (8×, 1/2×), half octaves as speedups.
      auto edge = [&](int i) {
        const int halves = i * 2 / b.axis.per_octave();  // per_octave is 1 or 2
        return halves % 2 == 0 ? tick_label(b.axis.lo + halves / 2) : format_speedup(std::pow(2.0, b.axis.lo + halves / 2.0));
      };
      range = fmt::format("{} to {}", edge(k - 1), edge(k));
    }
    std::string list;
    for (size_t i = 0; i < labels[k].size() && i < 12; ++i) list += "\n" + labels[k][i];
    if (labels[k].size() > 12) list += fmt::format("\nand {} more", labels[k].size() - 12);
    double y = f.y0 + f.h;
    for (int part = 0; part < 2; ++part) {
      const int n = part == 0 ? pass[k] : std_only[k];
      if (n == 0) continue;
      const double bh = f.h * n / max_count;
      y -= bh;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{} sample(s), "
          "{}:{}</title></rect>",
          x + 1, y, std::max(width - 2, 1.0), bh,
          (is_under || is_over) ? "bar-over" : part == 0 ? "bar-ok" : "bar-std", pass[k] + std_only[k], range,
          esc(list));
    }
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick ytick\">{}</text>", f.x0 - 4, f.y0 + 8, max_count);
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick ytick\">0</text>", f.x0 - 4, f.y0 + f.h);
  return out + "</svg>\n";
}

// Memory ratio against speedup, one point per correct sample with both, 1× lines dashed.
std::string memory_panel(const RunSummary& run, const ScopeSummary& scope, const std::string& id) {
  const Gate gate = headline_gate(scope);
  struct Point {
    double x, y;
    std::string label;
  };
  std::vector<Point> points;
  int correct = 0, with_memory = 0, with_speed = 0;
  for (const auto& v : run.samples) {
    if (v.level != scope.level || !v.passes(gate)) continue;
    ++correct;
    auto s = v.speedup.find(run.baseline);
    auto m = v.memory_ratio.find(run.baseline);
    if (s != v.speedup.end()) ++with_speed;
    if (m != v.memory_ratio.end()) ++with_memory;
    if (s == v.speedup.end() || m == v.memory_ratio.end() || !(s->second > 0) || !(m->second > 0)) continue;
    points.push_back({std::log2(s->second), std::log2(m->second),
                      fmt::format("{}: {} speed, {} memory", sample_label(v), format_speedup(s->second),
                                  format_speedup(m->second))});
  }
  const Frame f{kLeft, kPanelW - kLeft - kRight, kTop, kPanelH - kTop - kBottom};
  std::string out = svg_open(id, "memory ratio against speedup, " + scope.name);
  out += fmt::format("<text x=\"{}\" y=\"18\" class=\"ptitle\">{}</text>", kLeft, esc(scope.name));
  if (points.empty()) {
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", f.x0, f.y0, f.w, f.h);
    std::string why = correct == 0       ? "no correct samples"
                      : with_memory == 0 ? "memory: not measured"
                      : with_speed == 0  ? "speed: not measured"
                                         : "no sample has both";
    return out + fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">{}</text></svg>\n", f.x0 + f.w / 2,
                             f.y0 + f.h / 2, why);
  }
  std::vector<double> xs, ys;
  for (const auto& p : points) xs.push_back(p.x), ys.push_back(p.y);
  const LogAxis ax = log_axis(xs), ay = log_axis(ys);
  auto px = [&](double x) { return f.x0 + f.w * (std::clamp(x, double(ax.lo), double(ax.hi)) - ax.lo) / (ax.hi - ax.lo); };
  auto py = [&](double y) {
    return f.y0 + f.h - f.h * (std::clamp(y, double(ay.lo), double(ay.hi)) - ay.lo) / (ay.hi - ay.lo);
  };
  out += x_axis(f, ax, 0, 0, fmt::format("speedup vs {} → ; memory ratio ↑ (log scales)", run.baseline));
  out += fmt::format("<line x1=\"{1}\" x2=\"{2}\" y1=\"{0:.1f}\" y2=\"{0:.1f}\" class=\"one\"/>", py(0), f.x0,
                     f.x0 + f.w);
  for (int e = ay.lo; e <= ay.hi; ++e)
    if ((e - ay.lo) % ay.tick_step() == 0 || e == 0)
      out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tick ytick\">{}</text>", f.x0 - 4, py(e) + 3,
                         tick_label(e));
  for (const auto& p : points) {
    const bool off = p.x < ax.lo || p.x > ax.hi || p.y < ay.lo || p.y > ay.hi;
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" class=\"{}\"><title>{}{}</title></circle>", px(p.x),
                       py(p.y), off ? "pt pt-over" : "pt", esc(p.label), off ? " (off the axis, drawn at its edge)" : "");
  }
  return out + "</svg>\n";
}

namespace {

// The speedups (log2) of a run's samples that pass its headline gate, over all levels, and the
// slot count they are a share of.
struct RunSpeeds {
  std::vector<double> log2v;
  int slots = 0;
  int correct = 0;
};
RunSpeeds run_speeds(const RunSummary& run) {
  RunSpeeds r;
  if (run.scopes.empty()) return r;
  const ScopeSummary& all = run.scopes.back();
  const Gate gate = headline_gate(all);
  r.slots = all.slots;
  for (const auto& v : run.samples) {
    if (!v.passes(gate)) continue;
    ++r.correct;
    auto it = v.speedup.find(run.baseline);
    if (it != v.speedup.end() && it->second > 0) r.log2v.push_back(std::log2(it->second));
  }
  std::sort(r.log2v.begin(), r.log2v.end());
  return r;
}

// The smallest of 5%, 10%, 20%, 25%, 40%, 50%, 60%, 80%, 100% at or above `share` (fifths of each are round).
double nice_share(double share) {
  for (double s : {0.05, 0.1, 0.2, 0.25, 0.4, 0.5, 0.6, 0.8})
    if (share <= s) return s;
  return 1.0;
}

std::string share_ticks(const Frame& f, double top) {
  std::string out;
  for (int i = 0; i <= 5; ++i) {
    const double share = top * i / 5, y = f.y0 + f.h - f.h * i / 5;
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tick ytick\">{:g}%</text>", f.x0 - 4, y + 3, share * 100);
    if (i > 0 && i < 5)
      out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>", f.x0, f.x0 + f.w, y, y);
  }
  return out;
}

}  // namespace

std::string run_key(const ReportInput& input) {
  std::string out = "<p class=\"meta key\">";
  for (size_t i = 0; i < input.runs.size(); ++i)
    out += fmt::format("<span style=\"background:{}\"></span>{}", run_color(i), esc(input.runs[i].name));
  return out + "</p>";
}

// fast_p as a curve over the threshold p: the share of all slots that are correct with a speedup
// above p, one line per run; dots at KernelBench's thresholds.
std::string fast_p_svg(const ReportInput& input) {
  std::vector<RunSpeeds> speeds;
  std::vector<double> all;
  double top = 0;
  for (const auto& run : input.runs) {
    speeds.push_back(run_speeds(run));
    all.insert(all.end(), speeds.back().log2v.begin(), speeds.back().log2v.end());
    if (speeds.back().slots > 0)
      top = std::max(top, static_cast<double>(speeds.back().log2v.size()) / speeds.back().slots);
  }
  std::string out = overlay_panel("fast-p", "fast_p against the threshold p, one line per run",
                                  "fast_p: correct and faster than p× (share of all samples)", all.empty());
  if (all.empty()) return out;
  const Frame f{kLeft, kPanelW - kLeft - kRight, kTop, kPanelH - kTop - kBottom};
  const LogAxis a = log_axis(all);
  top = nice_share(top);
  auto px = [&](double e) { return f.x0 + f.w * (std::clamp(e, double(a.lo), double(a.hi)) - a.lo) / (a.hi - a.lo); };
  auto py = [&](double share) { return f.y0 + f.h - f.h * share / top; };
  out += x_axis(f, a, 0, 0, fmt::format("threshold p: speedup vs {} (log scale)", input.baseline));
  out += share_ticks(f, top);
  for (size_t r = 0; r < speeds.size(); ++r) {
    const RunSpeeds& s = speeds[r];
    if (s.slots == 0) continue;
    const double n = s.slots;
    auto above = [&](double e) {
      return static_cast<double>(s.log2v.end() - std::upper_bound(s.log2v.begin(), s.log2v.end(), e)) / n;
    };
    std::string pts = fmt::format("{:.1f},{:.1f}", px(a.lo), py(above(a.lo)));
    for (size_t i = 0; i < s.log2v.size();) {
      const double e = s.log2v[i];
      size_t j = i;
      while (j < s.log2v.size() && s.log2v[j] == e) ++j;
      if (e > a.lo && e < a.hi)
        pts += fmt::format(" {0:.1f},{1:.1f} {0:.1f},{2:.1f}", px(e), py(static_cast<double>(s.log2v.size() - i) / n),
                           py(static_cast<double>(s.log2v.size() - j) / n));
      i = j;
    }
    pts += fmt::format(" {:.1f},{:.1f}", px(a.hi), py(above(a.hi)));
    out += fmt::format("<polyline points=\"{}\" class=\"curve\" stroke=\"{}\"><title>{}</title></polyline>", pts,
                       run_color(r), esc(input.runs[r].name));
    for (double p : kFastPThresholds) {
      if (p <= 0) continue;
      const double e = std::log2(p);
      if (e < a.lo || e > a.hi) continue;
      out += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: fast_{:g} = {}</title></circle>", px(e),
          py(above(e)), run_color(r), esc(input.runs[r].name), p, format_rate(above(e)));
    }
  }
  return out + "</svg>\n";
}

// The speedup distributions of several runs on one axis: per run, the share of its slots in each
// bin, drawn as an outline in the run's colour.
std::string overlay_svg(const ReportInput& input) {
  std::vector<RunSpeeds> speeds;
  std::vector<double> all;
  for (const auto& run : input.runs) {
    speeds.push_back(run_speeds(run));
    all.insert(all.end(), speeds.back().log2v.begin(), speeds.back().log2v.end());
  }
  std::string out = overlay_panel("speedup-overlay", "speedup distributions of the runs overlaid",
                                  "speedup distributions (share of each run's samples)", all.empty());
  if (all.empty()) return out;
  const Frame f{kLeft, kPanelW - kLeft - kRight, kTop, kPanelH - kTop - kBottom};
  const Bins b = bins_for(log_axis(all));
  const int slots = b.inner + 2;
  const double under_w = b.axis.under ? f.w / slots : 0, over_w = b.axis.over ? f.w / slots : 0;
  const double bw = (f.w - under_w - over_w) / b.inner;
  std::vector<std::vector<double>> share(speeds.size(), std::vector<double>(slots, 0));
  double top = 0;
  for (size_t r = 0; r < speeds.size(); ++r) {
    if (speeds[r].slots == 0) continue;
    for (double e : speeds[r].log2v) share[r][b.bin_of(e) + 1] += 1.0 / speeds[r].slots;
    for (double s : share[r]) top = std::max(top, s);
  }
  top = nice_share(top);
  out += x_axis(f, b.axis, under_w, over_w, fmt::format("speedup vs {} (log scale)", input.baseline));
  out += share_ticks(f, top);
  auto slot_x = [&](int k) { return k == 0 ? f.x0 : k == slots - 1 ? f.x0 + f.w - over_w : f.x0 + under_w + (k - 1) * bw; };
  auto slot_w = [&](int k) { return k == 0 ? under_w : k == slots - 1 ? over_w : bw; };
  for (size_t r = 0; r < speeds.size(); ++r) {
    std::string pts;
    for (int k = 0; k < slots; ++k) {
      if (slot_w(k) == 0) continue;
      const double y = f.y0 + f.h - f.h * share[r][k] / top;
      pts += fmt::format("{}{:.1f},{:.1f} {:.1f},{:.1f}", pts.empty() ? "" : " ", slot_x(k), y, slot_x(k) + slot_w(k), y);
    }
    out += fmt::format("<polyline points=\"{}\" class=\"curve\" stroke=\"{}\"><title>{}: {} timed correct sample(s) "
                       "of {}</title></polyline>",
                       pts, run_color(r), esc(input.runs[r].name), speeds[r].log2v.size(), speeds[r].slots);
  }
  return out + "</svg>\n";
}

std::string verdict_svg(const RunSummary& run, const std::string& id) {
  const double label_w = 90, bar_w = 560, row_h = 22;
  std::vector<std::string> order = {"correct", "wrong_output", "flaky",         "rejected", "compile_error",
                                    "runtime_error", "timeout", "crashed", "problem_error", "missing"};
  for (const auto& s : run.scopes)
    for (const auto& [v, n] : s.verdicts)
      if (std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
  std::vector<std::string> used;
  for (const auto& v : order)
    for (const auto& s : run.scopes)
      if (s.verdicts.count(v)) {
        used.push_back(v);
        break;
      }
  const double legend_rows = std::ceil(static_cast<double>(used.size()) / 4.0);
  const double height = row_h * static_cast<double>(run.scopes.size()) + 10 + legend_rows * 18;
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"plot\" role=\"img\" aria-label=\"verdict breakdown\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\">",
      esc(id), label_w + bar_w + 10, height, label_w + bar_w + 10, height);
  for (size_t i = 0; i < run.scopes.size(); ++i) {
    const ScopeSummary& s = run.scopes[i];
    const double y = row_h * static_cast<double>(i);
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"vlabel\">{}</text>", label_w - 6, y + 15,
                       esc(s.level ? s.name : "all levels"));
    double x = label_w;
    for (const auto& v : used) {
      auto it = s.verdicts.find(v);
      if (it == s.verdicts.end() || s.slots == 0) continue;
      double seg = bar_w * it->second / s.slots;
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" class=\"seg\"><title>{}: {} of "
          "{}</title></rect>",
          x, y + 3, seg, row_h - 6, verdict_color(v), esc(v), it->second, s.slots);
      x += seg;
    }
  }
  double ly = row_h * static_cast<double>(run.scopes.size()) + 8;
  for (size_t i = 0; i < used.size(); ++i) {
    double lx = label_w + static_cast<double>(i % 4) * 140;
    double yy = ly + static_cast<double>(i / 4) * 18;
    out +=
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>", lx, yy, verdict_color(used[i]));
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"legend\">{}</text>", lx + 14, yy + 9, esc(used[i]));
  }
  return out + "</svg>\n";
}

}  // namespace kbv::html
