#include "compile/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "util/text.h"

namespace kbv {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int to_int(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// Removes ANSI colour sequences (ESC [ ... letter), present with -fdiagnostics-color=always.
std::string strip_ansi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && !std::isalpha(static_cast<unsigned char>(line[j]))) ++j;
      i = j;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

// Tools whose own messages carry no source location ("collect2: error: ...", "nvcc fatal : ...").
bool is_tool_name(std::string_view prefix) {
  size_t slash = prefix.rfind('/');
  std::string_view base = slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
  static const char* const kTools[] = {"ld",    "ld.lld", "ld.gold", "ld.bfd", "lld",  "collect2",
                                       "clang", "clang++", "gcc",    "g++",    "c++",  "cc",
                                       "nvcc",  "ptxas",  "nvlink",  "cicc",   "fatbinary"};
  return std::any_of(std::begin(kTools), std::end(kTools),
                     [&](const char* t) { return base == t; });
}

// The location before ": error: ". Fills file/line/column; false if `prefix` is not one.
bool parse_location(std::string_view prefix, Diagnostic& d) {
  // nvcc: file(line)
  if (!prefix.empty() && prefix.back() == ')') {
    size_t open = prefix.rfind('(');
    if (open != std::string_view::npos && open > 0) {
      std::string_view num = prefix.substr(open + 1, prefix.size() - open - 2);
      if (all_digits(num)) {
        d.file = std::string(prefix.substr(0, open));
        d.line = to_int(num);
        d.column = 0;
        return true;
      }
    }
  }
  // gcc/clang: file:line:col or file:line
  size_t c2 = prefix.rfind(':');
  if (c2 == std::string_view::npos) return false;
  std::string_view last = prefix.substr(c2 + 1);
  if (!all_digits(last)) return false;
  std::string_view rest = prefix.substr(0, c2);
  size_t c1 = rest.rfind(':');
  if (c1 != std::string_view::npos && all_digits(rest.substr(c1 + 1)) && c1 > 0) {
    d.file = std::string(rest.substr(0, c1));
    d.line = to_int(rest.substr(c1 + 1));
    d.column = to_int(last);
  } else {
    if (rest.empty()) return false;
    d.file = std::string(rest);
    d.line = to_int(last);
    d.column = 0;
  }
  return true;
}

// "file:line:col: error: msg", "file(line): error #20: msg", "collect2: error: msg",
// "nvcc fatal   : msg". Warnings and notes give nothing.
std::optional<Diagnostic> parse_error_line(const std::string& line) {
  struct Severity {
    const char* word;
    const char* name;
  };
  static const Severity kSeverities[] = {{"fatal error", "fatal error"},
                                         {"catastrophic error", "fatal error"},
                                         {"error", "error"}};
  // Try each ": " in turn: the file name itself may contain ": " only in odd cases.
  for (size_t pos = line.find(": "); pos != std::string::npos; pos = line.find(": ", pos + 1)) {
    std::string_view after = std::string_view(line).substr(pos + 2);
    for (const Severity& sev : kSeverities) {
      std::string_view word = sev.word;
      if (after.substr(0, word.size()) != word) continue;
      std::string_view tail = after.substr(word.size());
      // nvcc with --display-error-number: "error #20-D: msg"
      if (!tail.empty() && tail[0] == ' ' && tail.size() > 1 && tail[1] == '#') {
        size_t colon = tail.find(':');
        if (colon == std::string_view::npos) continue;
        tail = tail.substr(colon);
      }
      if (tail.empty() || tail[0] != ':') continue;
      Diagnostic d;
      d.severity = sev.name;
      d.message = std::string(trim(tail.substr(1)));
      std::string_view prefix = trim(std::string_view(line).substr(0, pos));
      if (parse_location(prefix, d)) return d;
      if (is_tool_name(prefix)) {
        d.file = std::string(prefix.substr(prefix.rfind('/') == std::string_view::npos
                                               ? 0
                                               : prefix.rfind('/') + 1));
        d.line = 0;
        return d;
      }
      break;
    }
  }
  // "nvcc fatal   : msg", "ptxas fatal   : msg", "ptxas error   : msg"
  for (const char* tool : {"nvcc", "ptxas", "nvlink"}) {
    std::string_view t = tool;
    if (line.compare(0, t.size(), t) != 0) continue;
    std::string_view rest = std::string_view(line).substr(t.size());
    if (rest.empty() || rest[0] != ' ') continue;
    rest = trim(rest);
    std::string severity;
    if (rest.substr(0, 5) == "fatal") {
      severity = "fatal error";
      rest.remove_prefix(5);
    } else if (rest.substr(0, 5) == "error") {
      severity = "error";
      rest.remove_prefix(5);
    } else {
      continue;
    }
    rest = trim(rest);
    if (rest.empty() || rest[0] != ':') continue;
    Diagnostic d;
    d.file = std::string(t);
    d.severity = severity;
    d.message = std::string(trim(rest.substr(1)));
    return d;
  }
  return std::nullopt;
}

// GNU ld: "[/usr/bin/ld: ][obj: in function `f':] main.cpp:(.text+0x1d): undefined reference to `x'"
// lld:    "ld.lld: error: undefined symbol: x" is handled as a tool error above.
std::optional<Diagnostic> parse_linker_line(const std::string& line) {
  static const std::string kMarker = "undefined reference to ";
  size_t at = line.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  Diagnostic d;
  d.severity = "error";
  d.message = std::string(trim(std::string_view(line).substr(at)));
  std::string_view before = std::string_view(line).substr(0, at);
  while (!before.empty() && (before.back() == ' ' || before.back() == ':')) before.remove_suffix(1);
  size_t sep = before.rfind(": ");
  std::string_view where = sep == std::string_view::npos ? before : before.substr(sep + 2);
  size_t section = where.find(":(");
  if (section != std::string_view::npos) where = where.substr(0, section);
  where = trim(where);
  if (where.empty() || is_tool_name(where)) where = "ld";
  d.file = std::string(where);
  return d;
}

bool same(const Diagnostic& a, const Diagnostic& b) {
  return a.file == b.file && a.line == b.line && a.column == b.column &&
         a.severity == b.severity && a.message == b.message;
}

// Summary lines that only repeat that something above failed.
bool is_summary(const Diagnostic& d) {
  return d.line == 0 && (d.message.find("ld returned") == 0 ||
                         d.message.find("linker command failed") == 0);
}

}  // namespace

std::vector<Diagnostic> parse_compiler_errors(std::string_view log, size_t max_errors) {
  std::vector<Diagnostic> found;
  for (std::string_view raw : split_lines(log)) {
    if (raw.find(": ") == std::string_view::npos && raw.find("fatal") == std::string_view::npos)
      continue;
    std::string line = strip_ansi(raw);
    std::optional<Diagnostic> d = parse_linker_line(line);
    if (!d) d = parse_error_line(line);
    if (!d) continue;
    if (std::any_of(found.begin(), found.end(), [&](const Diagnostic& f) { return same(f, *d); }))
      continue;
    found.push_back(std::move(*d));
  }
  // "collect2: error: ld returned 1 exit status" only when nothing says more.
  if (std::any_of(found.begin(), found.end(), [](const Diagnostic& d) { return !is_summary(d); })) {
    found.erase(std::remove_if(found.begin(), found.end(), is_summary), found.end());
  }
  if (found.size() > max_errors) found.resize(max_errors);
  return found;
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.file;
    if (d.line > 0) out += ":" + std::to_string(d.line);
    out += ": " + (d.severity.empty() ? std::string("error") : d.severity) + ": " + d.message;
  }
  return out;
}

PythonError parse_python_traceback(std::string_view traceback, std::string_view file_hint) {
  struct Frame {
    std::string file;
    int line = 0;
    std::string function;
    size_t index = 0;  // line index in the text
  };
  std::vector<std::string_view> lines = split_lines(traceback);
  std::vector<Frame> frames;
  for (size_t i = 0; i < lines.size(); ++i) {
    // '  File "path", line N, in func' (SyntaxError frames have no ", in func").
    std::string_view l = lines[i];
    size_t start = l.find("File \"");
    if (start == std::string_view::npos || !trim(l.substr(0, start)).empty()) continue;
    size_t path_begin = start + 6;
    size_t path_end = l.find("\", line ", path_begin);
    if (path_end == std::string_view::npos) continue;
    Frame f;
    f.file = std::string(l.substr(path_begin, path_end - path_begin));
    std::string_view rest = l.substr(path_end + 8);
    size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
    if (digits == 0 || digits > 9) continue;
    f.line = to_int(rest.substr(0, digits));
    rest = rest.substr(digits);
    if (rest.substr(0, 5) == ", in ") f.function = std::string(trim(rest.substr(5)));
    f.index = i;
    frames.push_back(std::move(f));
  }

  PythonError result;
  const Frame* chosen = nullptr;
  if (!file_hint.empty()) {
    for (const Frame& f : frames)
      if (f.file == file_hint) chosen = &f;
  }
  if (!chosen && !frames.empty()) chosen = &frames.back();
  if (chosen) {
    result.file = chosen->file;
    result.line = chosen->line;
    result.function = chosen->function;
  }

  // The exception: the first unindented line after the last frame (the frame's source and
  // caret lines are indented), which is the head of a possibly multi-line message such as
  // torch's "RuntimeError: CUDA error: ..." followed by advice lines. Without frames, or if
  // nothing follows them, the last non-empty line.
  if (!frames.empty()) {
    for (size_t i = frames.back().index + 1; i < lines.size(); ++i) {
      std::string_view l = lines[i];
      if (trim(l).empty() || std::isspace(static_cast<unsigned char>(l[0]))) continue;
      result.exception = std::string(trim(l));
      break;
    }
  }
  if (result.exception.empty()) {
    for (size_t i = lines.size(); i-- > 0;) {
      if (!trim(lines[i]).empty()) {
        result.exception = std::string(trim(lines[i]));
        break;
      }
    }
  }
  return result;
}

std::optional<int> source_line_of(std::string_view generated, std::string_view source, int line, int min_run) {
  const std::vector<std::string_view> g = split_lines(generated), src = split_lines(source);
  if (line < 1 || static_cast<size_t>(line) > g.size()) return std::nullopt;
  const size_t n = static_cast<size_t>(line) - 1;
  size_t best_run = 0, best_at = 0;
  bool tie = false;
  for (size_t p = 0; p < src.size(); ++p) {
    if (src[p] != g[n]) continue;
    size_t up = 0, down = 0;
    while (up < n && up < p && g[n - up - 1] == src[p - up - 1]) ++up;
    while (n + down + 1 < g.size() && p + down + 1 < src.size() && g[n + down + 1] == src[p + down + 1]) ++down;
    const size_t run = up + down + 1;
    if (run > best_run) {
      best_run = run, best_at = p, tie = false;
    } else if (run == best_run) {
      tie = true;
    }
  }
  if (best_run == 0 || tie || best_run < static_cast<size_t>(std::max(min_run, 1))) return std::nullopt;
  return static_cast<int>(best_at) + 1;
}

}  // namespace kbv
