// The self-contained HTML report: inline CSS, inline SVG plots, a small inline script for sorting
// tables. No external scripts, fonts, images or network.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/render.h"

namespace kbv {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* verdict_color(const std::string& v) {
  if (v == "correct") return "#2e7d32";
  if (v == "wrong_output") return "#ef6c00";
  if (v == "rejected") return "#6a1b9a";
  if (v == "compile_error") return "#546e7a";
  if (v == "runtime_error") return "#c62828";
  if (v == "timeout") return "#f9a825";
  if (v == "crashed") return "#4e342e";
  if (v == "problem_error") return "#0277bd";
  if (v == "missing") return "#bdbdbd";
  return "#9e9e9e";
}

void html_table(std::string& out, const Table& t) {
  out += fmt::format("<table id=\"{}\" class=\"{}\"><thead><tr>", esc(t.id), t.sortable ? "sortable" : "plain");
  auto is_text = [](const Cell& c) { return !c.sort || c.left; };
  for (size_t i = 0; i < t.header.size(); ++i) {
    bool text_column = !t.rows.empty() && i < t.rows.front().size() && is_text(t.rows.front()[i]);
    out += (text_column ? "<th class=\"t\">" : "<th>") + esc(t.header[i]) + "</th>";
  }
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const auto& c : row) {
      out += "<td";
      std::string cls = c.tone;
      if (is_text(c)) cls += cls.empty() ? "t" : " t";  // text: left-aligned
      if (!cls.empty()) out += " class=\"" + cls + "\"";
      if (c.sort) out += fmt::format(" data-v=\"{:.10g}\"", *c.sort);
      out += ">" + esc(c.text) + "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table>\n";
}

// --- plots -----------------------------------------------------------------------------------

constexpr double kPanelW = 300, kPanelH = 190, kLeft = 40, kRight = 10, kTop = 24, kBottom = 34;

std::string tick_label(int exponent) {
  if (exponent >= 0) return fmt::format("{}×", 1 << exponent);
  return fmt::format("1/{}×", 1 << -exponent);
}

// Speedup distribution of one level: log2 histogram, correct samples stacked over those that
// passed only the standard check.
std::string speedup_panel(const RunSummary& run, const ScopeSummary& scope, double x0) {
  constexpr int kMinExp = -4, kMaxExp = 4, kBinsPerOctave = 2;
  constexpr int kBins = (kMaxExp - kMinExp) * kBinsPerOctave;
  const Gate gate = headline_gate(scope);
  std::vector<int> gated(kBins, 0), standard_only(kBins, 0);
  int correct = 0, timed = 0;
  for (const auto& v : run.samples) {
    if (v.level != scope.level) continue;
    const bool pass = v.passes(gate);
    const bool std_only = gate == Gate::hidden && !pass && v.passes(Gate::standard);
    if (!pass && !std_only) continue;
    if (pass) ++correct;
    auto it = v.speedup.find(run.baseline);
    if (it == v.speedup.end()) continue;
    if (pass) ++timed;
    int bin = static_cast<int>(std::floor((std::log2(it->second) - kMinExp) * kBinsPerOctave));
    bin = std::clamp(bin, 0, kBins - 1);
    (pass ? gated : standard_only)[bin]++;
  }
  const double w = kPanelW - kLeft - kRight, h = kPanelH - kTop - kBottom;
  std::string out = fmt::format("<g transform=\"translate({},0)\">", x0);
  out += fmt::format("<text x=\"{}\" y=\"14\" class=\"ptitle\">{}</text>", kLeft, esc(scope.name));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", kLeft, kTop, w, h);
  int max_count = 0;
  for (int i = 0; i < kBins; ++i) max_count = std::max(max_count, gated[i] + standard_only[i]);
  if (max_count == 0) {
    const char* why = correct > 0 && timed == 0 ? "not measured" : "no correct samples";
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">{}</text></g>", kLeft + w / 2, kTop + h / 2, why);
    return out;
  }
  const double bw = w / kBins;
  for (int i = 0; i < kBins; ++i) {
    double y = kTop + h;
    for (int part = 0; part < 2; ++part) {
      int n = part == 0 ? gated[i] : standard_only[i];
      if (n == 0) continue;
      double bh = h * n / max_count;
      y -= bh;
      double lo = std::pow(2.0, kMinExp + static_cast<double>(i) / kBinsPerOctave);
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{} sample(s), "
          "{:.3g}× to {:.3g}×{}</title></rect>",
          kLeft + i * bw + 1, y, bw - 2, bh, part == 0 ? "bar-ok" : "bar-std", n, lo, lo * std::sqrt(2.0),
          part == 0 ? "" : " (passed the standard check only)");
    }
  }
  for (int e = kMinExp; e <= kMaxExp; e += 2) {
    double x = kLeft + (e - kMinExp) * kBinsPerOctave * bw;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tick\">{}</text>", x, kTop + h + 14, tick_label(e));
  }
  double one = kLeft + (0 - kMinExp) * kBinsPerOctave * bw;
  out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"one\"/>", one, kTop, kTop + h);
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\">{}</text>", kLeft - 4, kTop + 8, max_count);
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">speedup vs {} (log scale)</text>", kLeft + w / 2,
                     kPanelH - 4, esc(run.baseline));
  return out + "</g>";
}

// Memory ratio against speedup, one point per correct sample with both, 1× lines dashed.
std::string memory_panel(const RunSummary& run, const ScopeSummary& scope, double x0) {
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
    if (s == v.speedup.end() || m == v.memory_ratio.end()) continue;
    points.push_back(
        {std::log2(s->second), std::log2(m->second),
         fmt::format("{} sample {}: {} speed, {} memory", v.problem.empty() ? std::to_string(v.problem_id) : v.problem,
                     v.sample_id, format_speedup(s->second), format_speedup(m->second))});
  }
  const double w = kPanelW - kLeft - kRight, h = kPanelH - kTop - kBottom;
  std::string out = fmt::format("<g transform=\"translate({},0)\">", x0);
  out += fmt::format("<text x=\"{}\" y=\"14\" class=\"ptitle\">{}</text>", kLeft, esc(scope.name));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>", kLeft, kTop, w, h);
  if (points.empty()) {
    std::string why = correct == 0       ? "no correct samples"
                      : with_memory == 0 ? "memory: not measured"
                      : with_speed == 0  ? "speed: not measured"
                                         : "no sample has both";
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">{}</text></g>", kLeft + w / 2, kTop + h / 2, why);
    return out;
  }
  int lo_x = -2, hi_x = 2, lo_y = -2, hi_y = 2;
  for (const auto& p : points) {
    lo_x = std::min(lo_x, static_cast<int>(std::floor(p.x)));
    hi_x = std::max(hi_x, static_cast<int>(std::ceil(p.x)));
    lo_y = std::min(lo_y, static_cast<int>(std::floor(p.y)));
    hi_y = std::max(hi_y, static_cast<int>(std::ceil(p.y)));
  }
  lo_x = std::max(lo_x, -8), hi_x = std::min(hi_x, 8), lo_y = std::max(lo_y, -8), hi_y = std::min(hi_y, 8);
  auto px = [&](double x) { return kLeft + w * (std::clamp(x, double(lo_x), double(hi_x)) - lo_x) / (hi_x - lo_x); };
  auto py = [&](double y) { return kTop + h - h * (std::clamp(y, double(lo_y), double(hi_y)) - lo_y) / (hi_y - lo_y); };
  out +=
      fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"one\"/>", px(0), kTop, kTop + h);
  out +=
      fmt::format("<line x1=\"{1}\" x2=\"{2}\" y1=\"{0:.1f}\" y2=\"{0:.1f}\" class=\"one\"/>", py(0), kLeft, kLeft + w);
  int step_x = (hi_x - lo_x) > 8 ? 4 : 2, step_y = (hi_y - lo_y) > 8 ? 4 : 2;
  for (int e = 0; e <= hi_x; e += step_x)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tick\">{}</text>", px(e), kTop + h + 14, tick_label(e));
  for (int e = -step_x; e >= lo_x; e -= step_x)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tick\">{}</text>", px(e), kTop + h + 14, tick_label(e));
  for (int e = lo_y; e <= hi_y; ++e)
    if (e % step_y == 0)
      out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"tick ytick\">{}</text>", kLeft - 3, py(e) + 3,
                         tick_label(e));
  for (const auto& p : points)
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" class=\"pt\"><title>{}</title></circle>", px(p.x),
                       py(p.y), esc(p.label));
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">speedup vs {} → ; memory ratio ↑</text>",
                     kLeft + w / 2, kPanelH - 4, esc(run.baseline));
  return out + "</g>";
}

template <class Panel>
std::string panels_svg(const RunSummary& run, const std::string& id, const std::string& label, Panel panel) {
  std::vector<const ScopeSummary*> levels;
  for (const auto& s : run.scopes)
    if (s.level != 0) levels.push_back(&s);
  double width = kPanelW * static_cast<double>(std::max<size_t>(levels.size(), 1));
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"plot\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">",
      esc(id), esc(label), width, kPanelH, width, kPanelH);
  for (size_t i = 0; i < levels.size(); ++i) out += panel(run, *levels[i], kPanelW * static_cast<double>(i));
  return out + "</svg>\n";
}

std::string verdict_svg(const RunSummary& run, const std::string& id) {
  const double label_w = 90, bar_w = 560, row_h = 22;
  std::vector<std::string> order = {"correct", "wrong_output", "rejected",      "compile_error", "runtime_error",
                                    "timeout", "crashed",      "problem_error", "missing"};
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

const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:24px;
  color:#212121;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#616161}ul.notes{color:#424242;margin:4px 0 10px;padding-left:20px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #e0e0e0;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f5f5f5;font-weight:600}td:first-child,th:first-child{text-align:left}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#eeeeee}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td.t,th.t{text-align:left}td.good{color:#1b5e20}td.bad{color:#b71c1c}td.na{color:#9e9e9e;font-style:italic}
table[id^=samples] td:last-child{max-width:520px;word-break:break-word}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{max-width:100%;height:auto}
.frame{fill:#fafafa;stroke:#bdbdbd}.one{stroke:#424242;stroke-dasharray:4 3}
.bar-ok{fill:#43a047}.bar-std{fill:#ffb74d}.pt{fill:#1e88e5;fill-opacity:.75;stroke:#0d47a1;stroke-width:.5}
.ptitle{font-size:12px;font-weight:600}.tick{font-size:10px;fill:#616161;text-anchor:middle}.ytick{text-anchor:end}
.axis{font-size:10px;fill:#424242;text-anchor:middle}
.empty{font-size:12px;fill:#9e9e9e;text-anchor:middle;font-style:italic}
.vlabel{font-size:11px;text-anchor:end}.legend{font-size:11px}
.key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
details summary{cursor:pointer;color:#1565c0}
)css";

// Sorting, plus a self-check that marks the page: data-kbv-ready="ok" when the script ran without
// an error, an element #kbv-error when any uncaught error happened (the Chromium test reads both).
const char* kScript = R"js(
window.addEventListener('error', function (e) {
  var d = document.createElement('pre'); d.id = 'kbv-error';
  d.textContent = 'script error: ' + (e.message || e);
  document.body.appendChild(d);
});
(function () {
  function cellKey(row, col) {
    var td = row.cells[col];
    if (!td) return { num: null, text: '' };
    var v = td.getAttribute('data-v');
    return { num: v === null ? null : parseFloat(v), text: td.textContent };
  }
  function compare(a, b) {
    if (a.num !== null && b.num !== null) return a.num - b.num;
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }
  function sortBy(table, col, descending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (r, i) { if (!r.hasAttribute('data-i')) r.setAttribute('data-i', String(i)); });
    rows.sort(function (a, b) {
      var c = compare(cellKey(a, col), cellKey(b, col));
      if (c === 0) return parseInt(a.getAttribute('data-i'), 10) - parseInt(b.getAttribute('data-i'), 10);
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.classList.remove('asc', 'desc');
      if (i === col) th.classList.add(descending ? 'desc' : 'asc');
    });
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener('click', function () { sortBy(table, col, th.classList.contains('asc')); });
    });
  });
  // Self-check: sort each sortable table by its first numeric column both ways, verify the order,
  // then restore the original order.
  Array.prototype.forEach.call(tables, function (table) {
    var body = table.tBodies[0];
    if (body.rows.length < 2) return;
    var original = Array.prototype.slice.call(body.rows);
    var col = -1;
    for (var c = 0; c < table.tHead.rows[0].cells.length && col < 0; c++)
      if (body.rows[0].cells[c] && body.rows[0].cells[c].hasAttribute('data-v')) col = c;
    if (col < 0) return;
    [false, true].forEach(function (descending) {
      sortBy(table, col, descending);
      for (var i = 1; i < body.rows.length; i++) {
        var c = compare(cellKey(body.rows[i - 1], col), cellKey(body.rows[i], col));
        if (descending ? c < 0 : c > 0) throw new Error('table ' + table.id + ' did not sort by column ' + col);
      }
    });
    original.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.classList.remove('asc', 'desc'); });
  });
  var plots = document.querySelectorAll('svg.plot').length;
  document.body.setAttribute('data-kbv-plots', String(plots));
  document.body.setAttribute('data-kbv-ready', 'ok');
})();
)js";

}  // namespace

std::string render_html(const ReportInput& input) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += "<title>kbv report</title><style>" + std::string(kStyle) + "</style></head><body>\n";
  out += "<h1>kbv report</h1>";
  out += fmt::format(
      "<p class=\"meta\">kbv {} · speedups against the <b>{}</b> baseline (baseline time / candidate "
      "time) unless a column names another · definitions in docs/METRICS.md · click a column of a "
      "table with ▲▼ to sort</p>",
      KBV_VERSION, esc(input.baseline));
  if (!input.notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const auto& n : input.notes) out += "<li>" + esc(n) + "</li>";
    out += "</ul>";
  }
  if (input.runs.size() > 1) {
    out += "<h2>Leaderboard</h2>";
    html_table(out, leaderboard_table(input));
  }
  if (Table t = precision_table(input); !t.rows.empty()) {
    out += "<h2>" + esc(t.title) + "</h2>";
    html_table(out, t);
  }
  for (size_t i = 0; i < input.runs.size(); ++i) {
    const RunSummary& run = input.runs[i];
    out += fmt::format("<h2>{}</h2><p class=\"meta\">protocol <code>{}</code> · device {}</p>", esc(run.name),
                       esc(run.protocol), esc(run.device.empty() ? "not recorded" : run.device));
    if (!run.notes.empty()) {
      out += "<ul class=\"notes\">";
      for (const auto& n : run.notes) out += "<li>" + esc(n) + "</li>";
      out += "</ul>";
    }
    if (run.scopes.empty()) {
      out += "<p>No records.</p>";
      continue;
    }
    out += "<h3>Summary</h3>";
    html_table(out, summary_table(run, i));
    Table survival = survival_table(run, run.scopes.back(), i);
    out += "<h3>" + esc(survival.title) + "</h3>";
    html_table(out, survival);

    out += "<h3>Speedup distribution per level</h3><div class=\"plots\">";
    out += panels_svg(run, fmt::format("speedup-{}", i), "speedup distribution per level", speedup_panel);
    out += "</div><p class=\"meta key\"><span style=\"background:#43a047\"></span>correct";
    if (run.scopes.back().hidden.available)
      out += "<span style=\"background:#ffb74d\"></span>passed the standard check only (failed a hidden distribution)";
    out += "</p>";
    out += "<h3>Memory ratio against speedup per level</h3><div class=\"plots\">";
    out += panels_svg(run, fmt::format("memory-{}", i), "memory ratio against speedup per level", memory_panel);
    out +=
        "</div><p class=\"meta\">one point per correct sample; memory ratio = baseline peak bytes / candidate peak "
        "bytes (above 1: uses less memory); dashed lines at 1×</p>";
    out += "<h3>Verdicts</h3>";
    out += verdict_svg(run, fmt::format("verdict-{}", i));
    html_table(out, verdict_table(run, i));
    Table samples = samples_table(run, i);
    out += fmt::format("<h3>Per problem</h3><details{}><summary>{} sample(s)</summary>",
                       samples.rows.size() <= 300 ? " open" : "", samples.rows.size());
    html_table(out, samples);
    out += "</details>";
  }
  out += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return out;
}

}  // namespace kbv
