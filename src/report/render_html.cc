// The self-contained HTML report: inline CSS, inline SVG plots, a small inline script for sorting
// tables. No external scripts, fonts, images or network. This file: the page (its shell, CSS,
// script, sections) and its tables; the plots: report/html_plots.cc.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/html_plots.h"
#include "report/render.h"

namespace kbv {

std::string html::esc(const std::string& s) {
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

using namespace html;

namespace {

void html_table(std::string& out, const Table& t) {
  // Wide tables scroll inside their box; the page itself never scrolls sideways.
  out += "<div class=\"scroll\">";
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
  out += "</tbody></table></div>\n";
}

const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:24px;
  color:#212121;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#616161}p.warn{background:#fff3e0;border-left:4px solid #e65100;padding:6px 10px}ul.notes{color:#424242;margin:4px 0 10px;padding-left:20px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #e0e0e0;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f5f5f5;font-weight:600}td:first-child,th:first-child{text-align:left}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#eeeeee}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td.t,th.t{text-align:left}td.good{color:#1b5e20}td.bad{color:#b71c1c}td.na{color:#9e9e9e;font-style:italic}
table[id^=samples] td:last-child{max-width:520px;word-break:break-word}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));gap:12px 20px}
.plot{max-width:100%;height:auto}.plots .plot{width:100%;display:block}
.scroll{max-width:100%;overflow-x:auto}.meta,ul.notes,h2,h3{overflow-wrap:anywhere}
.bar-over{fill:#c62828}.pt-over{fill:#c62828;stroke:#7f0000}.curve{fill:none;stroke-width:2}
.grid{stroke:#eeeeee}
.frame{fill:#fafafa;stroke:#bdbdbd}.one{stroke:#424242;stroke-dasharray:4 3}
.bar-ok{fill:#43a047}.bar-std{fill:#ffb74d}.pt{fill:#1e88e5;fill-opacity:.75;stroke:#0d47a1;stroke-width:.5}
.ptitle{font-size:15px;font-weight:600}.tick{font-size:12px;fill:#616161;text-anchor:middle}.ytick{text-anchor:end}
.axis{font-size:13px;fill:#424242;text-anchor:middle}
.empty{font-size:15px;fill:#9e9e9e;text-anchor:middle;font-style:italic}
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
  // Layout check: the page is no wider than the window (no sideways scrolling), and no plot is
  // drawn narrower than 280 px or wider than the window.
  var doc = document.documentElement;
  document.body.setAttribute('data-kbv-scroll-width', String(doc.scrollWidth));
  document.body.setAttribute('data-kbv-client-width', String(doc.clientWidth));
  var narrow = 0, widest = 0;
  Array.prototype.forEach.call(document.querySelectorAll('.plots svg.plot'), function (svg) {
    var w = svg.getBoundingClientRect().width;
    if (w < 280) narrow++;
    widest = Math.max(widest, w);
  });
  document.body.setAttribute('data-kbv-narrow-plots', String(narrow));
  document.body.setAttribute('data-kbv-widest-plot', String(Math.round(widest)));
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
  for (const auto& run : input.runs)
    if (!run.timing_notice.empty())
      out += "<p class=\"warn\"><b>Warning (" + esc(run.name) + "):</b> " + esc(run.timing_notice) + "</p>";
  if (input.verified_tables) {
    out += "<h2>KernelBench-Verified tables</h2><p class=\"meta\">best-of-n per problem against the " +
           esc(input.baseline) +
           " baseline, as KernelBench-Verified's scoring code computes them (docs/METRICS.md, \"The verified "
           "table\")</p>";
    for (const Table& t : {verified_speed_table(input), verified_memory_table(input), verified_overall_table(input)}) {
      out += "<h3>" + esc(t.title) + "</h3>";
      html_table(out, t);
    }
  }
  if (input.runs.size() > 1) {
    out += "<h2>Leaderboard</h2>";
    html_table(out, leaderboard_table(input));
    Table gates = gates_table(input);
    out += "<h3>" + esc(gates.title) + "</h3>";
    html_table(out, gates);
  }
  if (!input.runs.empty()) {
    out += "<h2>Runs compared</h2><div class=\"plots\" id=\"compare\">" + fast_p_svg(input);
    if (input.runs.size() > 1) out += overlay_svg(input);
    out += "</div>" + run_key(input);
    out += "<p class=\"meta\">each run under its headline gate (the hidden distributions when it has them); shares "
           "are of all its samples, missing ones included</p>";
  }
  if (Table t = precision_table(input); !t.rows.empty()) {
    out += "<h2>" + esc(t.title) + "</h2>";
    html_table(out, t);
  }
  for (size_t i = 0; i < input.runs.size(); ++i) {
    const RunSummary& run = input.runs[i];
    out += fmt::format("<h2>{}</h2><p class=\"meta\">protocol <code>{}</code> · device {}</p>", esc(run.name),
                       esc(run.protocol), esc(run.device.empty() ? "not recorded" : run.device));
    if (!run.timing_notice.empty() && input.runs.size() > 1)  // one run: the top says it
      out += "<p class=\"warn\">" + esc(run.timing_notice) + "</p>";
    if (!run.notes.empty()) {
      out += "<ul class=\"notes\">";
      for (const auto& n : run.notes) out += "<li>" + esc(n) + "</li>";
      for (const auto& [b, label] : run.baseline_labels)
        out += "<li>baseline " + esc(b) + " measured: " + esc(label) + "</li>";
      out += "</ul>";
    }
    if (Table t = excluded_table(run, i); !t.rows.empty()) {
      out += "<h3>" + esc(t.title) + "</h3>";
      html_table(out, t);
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

    out += "<h3>Speedup distribution per level</h3>";
    out += panels(run, fmt::format("speedup-{}", i), speedup_panel);
    out += "<p class=\"meta key\"><span style=\"background:#43a047\"></span>correct";
    if (run.scopes.back().hidden.available)
      out += "<span style=\"background:#ffb74d\"></span>passed the standard check only (failed a hidden distribution)";
    out += fmt::format("<span style=\"background:#c62828\"></span>beyond {} or {} (hover for the values)",
                       tick_label(-kCap), tick_label(kCap));
    out += "</p>";
    out += "<h3>Memory ratio against speedup per level</h3>";
    out += panels(run, fmt::format("memory-{}", i), memory_panel);
    out +=
        "<p class=\"meta\">one point per correct sample; memory ratio = baseline peak bytes / candidate peak "
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
