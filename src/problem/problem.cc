#include "problem/problem.h"

#include "util/fs.h"
#include "util/text.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

namespace kbv {

namespace fs = std::filesystem;

namespace {

const char kDatasetExample[] =
    "expected a KernelBench dataset root like "
    "KernelBench/level1/1_Square_matrix_multiplication_.py";
const char kRunExample[] =
    "expected a KernelBench run folder with files like level_1_problem_1_sample_0_kernel.py";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses a run of decimal digits (1 to 9 of them, so it fits an int).
std::optional<int> parse_digits(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (char c : digits)
    if (!is_digit(c)) return std::nullopt;
  int value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

// Consumes `prefix` from the front of `s`.
bool eat(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Consumes a run of digits from the front of `s`.
std::optional<int> eat_number(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && is_digit(s[n])) ++n;
  std::optional<int> value = parse_digits(s.substr(0, n));
  if (value) s.remove_prefix(n);
  return value;
}

// "level3" -> 3; anything else -> nullopt.
std::optional<int> parse_level_folder(std::string_view name) {
  if (!eat(name, "level")) return std::nullopt;
  return parse_digits(name);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string relative_name(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_relative(root);
  return (rel.empty() ? path : rel).generic_string();
}

bool is_skipped_folder(const std::string& name) {
  // Editor and tool folders hold copies of problems (.ipynb_checkpoints/26_GELU_-checkpoint.py).
  return name.empty() || name[0] == '.' || name == "__pycache__";
}

// Why `dir` cannot be listed ("<dir>: no such directory; <expected>"), or "" when it can.
std::string folder_problem(const fs::path& dir, const char* expected) {
  std::error_code ec;
  fs::file_status status = fs::status(dir, ec);
  if (status.type() == fs::file_type::not_found)
    return dir.string() + ": no such directory; " + expected;
  if (ec) return "cannot access " + dir.string() + ": " + ec.message();
  if (status.type() != fs::file_type::directory)
    return dir.string() + ": not a directory; " + expected;
  return "";
}

// The level<L> folders directly under root, sorted by level then path.
std::vector<std::pair<int, fs::path>> level_folders(const fs::path& root) {
  std::vector<std::pair<int, fs::path>> levels;
  std::error_code ec;
  fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    if (std::optional<int> level = parse_level_folder(it->path().filename().string()))
      levels.emplace_back(*level, it->path());
  }
  std::sort(levels.begin(), levels.end());
  return levels;
}

std::string why_no_level_folder(const fs::path& root) {
  // Two mistakes users make: passing the KernelBench repository instead of its dataset folder,
  // and passing one level folder instead of the root above it.
  std::error_code ec;
  fs::path nested = root / "KernelBench";
  if (fs::is_directory(nested, ec) && !level_folders(nested).empty())
    return " (did you mean " + nested.string() + "?)";
  fs::path absolute = fs::absolute(root, ec);
  if (ec) absolute = root;
  absolute = absolute.lexically_normal();
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  if (parse_level_folder(absolute.filename().string()))
    return " (" + root.string() + " is itself a level folder; pass the folder above it, " +
           absolute.parent_path().string() + ")";
  return "";
}

// Problem files of one level folder, searched recursively, in sorted path order.
void collect_level(int level, const fs::path& folder, const fs::path& root, Discovery& out) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec),
      end;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      if (is_skipped_folder(name)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(type_ec)) continue;
    if (it->path().extension() != ".py" || name == "__init__.py" || name[0] == '.') continue;
    files.push_back(it->path());
  }
  if (ec)
    out.warnings.push_back("cannot list everything in " + relative_name(folder, root) + ": " +
                           ec.message());
  std::sort(files.begin(), files.end());

  std::map<int, fs::path> kept;
  for (const fs::path& path : files) {
    std::string name = path.filename().string();
    std::optional<int> id = parse_problem_id(name);
    if (!id) {
      out.warnings.push_back(relative_name(path, root) +
                             ": no numeric id before the first '_'; skipped");
      continue;
    }
    auto [pos, inserted] = kept.emplace(*id, path);
    if (!inserted) {
      out.warnings.push_back(relative_name(pos->second, root) + " and " +
                             relative_name(path, root) + " both have id " + std::to_string(*id) +
                             "; keeping the first");
      continue;
    }
    out.problems.push_back(ProblemRef{level, *id, name, path});
  }
  if (kept.empty())
    out.warnings.push_back(relative_name(folder, root) + ": no problem files (<id>_<Name>.py)");
}

struct RunFileName {
  int level = 0;
  int problem = 0;
  int sample = 0;
  int rank = 0;  // preference among forms of one sample: 0 .py, 1 .md, 2 .txt, 3 _response.md
};

// The raw answer `kbv generate` keeps beside the extracted code: used only when no kernel file
// of that sample exists (the answer had no code block), and then it fails with that message.
constexpr int kResponseRank = 3;

// "level_1_problem_26_sample_0_kernel.py" -> {1, 26, 0, .py}.
std::optional<RunFileName> parse_run_file_name(std::string_view name) {
  RunFileName out;
  std::optional<int> level, problem, sample;
  if (!eat(name, "level_") || !(level = eat_number(name))) return std::nullopt;
  if (!eat(name, "_problem_") || !(problem = eat_number(name))) return std::nullopt;
  if (!eat(name, "_sample_") || !(sample = eat_number(name))) return std::nullopt;
  if (name == "_response.md")
    out.rank = kResponseRank;
  else if (!eat(name, "_kernel"))
    return std::nullopt;
  else if (name == ".py")
    out.rank = 0;
  else if (name == ".md")
    out.rank = 1;
  else if (name == ".txt")
    out.rank = 2;
  else
    return std::nullopt;
  out.level = *level;
  out.problem = *problem;
  out.sample = *sample;
  return out;
}

// ---------------------------------------------------------------------------
// Code extraction.

struct Line {
  size_t begin = 0;  // offset of the first character
  size_t end = 0;    // offset of the '\n' (or the end of the text)
  int number = 0;    // 1-based
};

std::vector<Line> numbered_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t begin = 0;
  int number = 1;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(Line{begin, end, number++});
    begin = end + 1;
  }
  return lines;
}

// The reasoning section [begin, end) of a model's answer: from <think> to </think> (or
// <thinking>, <reasoning>), or from the start of the text to a closing tag with no opening one
// (chat templates often put the opening tag in the prompt).
std::pair<size_t, size_t> find_reasoning(std::string_view text) {
  const std::string_view tags[] = {"think", "thinking", "reasoning"};
  size_t best_close = std::string_view::npos;
  std::string_view best_tag;
  for (std::string_view tag : tags) {
    std::string close = "</" + std::string(tag) + ">";
    size_t pos = text.find(close);
    if (pos < best_close) {
      best_close = pos;
      best_tag = tag;
    }
  }
  if (best_close == std::string_view::npos) return {0, 0};
  std::string open = "<" + std::string(best_tag) + ">";
  size_t open_pos = text.substr(0, best_close).find(open);
  size_t begin = open_pos == std::string_view::npos ? 0 : open_pos;
  return {begin, best_close + best_tag.size() + 3};
}

struct Fence {
  size_t indent = 0;      // columns of whitespace before the backticks
  size_t ticks = 0;       // length of the backtick run (3 or more)
  std::string_view info;  // the rest of the line, trimmed
};

// A line that opens a fenced block: optional indentation, three or more backticks, then an
// info string with no backtick in it.
std::optional<Fence> opening_fence(std::string_view line) {
  Fence fence;
  while (fence.indent < line.size() && (line[fence.indent] == ' ' || line[fence.indent] == '\t'))
    ++fence.indent;
  line.remove_prefix(fence.indent);
  while (fence.ticks < line.size() && line[fence.ticks] == '`') ++fence.ticks;
  if (fence.ticks < 3) return std::nullopt;
  fence.info = trim(line.substr(fence.ticks));
  if (fence.info.find('`') != std::string_view::npos) return std::nullopt;
  return fence;
}

bool closes(std::string_view line, const Fence& fence) {
  std::string_view t = trim(line);
  return t.size() >= fence.ticks && t.find_first_not_of('`') == std::string_view::npos;
}

// A closing fence glued to the block's last line of code (`    return x```), which KernelBench's
// extractor (the first ``` after the opening one ends the block) accepts: the code before it, or
// nullopt when the line does not end with a run of at least the fence's backticks.
std::optional<std::string_view> glued_close(std::string_view line, const Fence& fence) {
  size_t end = line.find_last_not_of(" \t");
  if (end == std::string_view::npos) return std::nullopt;
  line = line.substr(0, end + 1);
  size_t code_end = line.find_last_not_of('`');
  if (code_end == std::string_view::npos || line.size() - (code_end + 1) < fence.ticks) return std::nullopt;
  return line.substr(0, code_end + 1);
}

bool is_language_tag(std::string_view info) {
  std::string tag = lower(info);
  return tag == "python" || tag == "py" || tag == "cpp" || tag == "c++" || tag == "cuda" ||
         tag == "c";
}

std::string_view without_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Removes up to `indent` leading spaces or tabs (the fence's own indentation).
std::string_view dedent(std::string_view line, size_t indent) {
  size_t n = 0;
  while (n < indent && n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return line.substr(n);
}

}  // namespace

std::optional<int> parse_problem_id(std::string_view file_name) {
  size_t underscore = file_name.find('_');
  if (underscore == std::string_view::npos) return std::nullopt;
  return parse_digits(file_name.substr(0, underscore));
}

Discovery discover_dataset(const fs::path& root, std::optional<int> level) {
  Discovery out;
  out.error = folder_problem(root, kDatasetExample);
  if (!out.error.empty()) return out;

  std::vector<std::pair<int, fs::path>> levels = level_folders(root);
  if (levels.empty()) {
    out.error = root.string() + ": no level<N> folder found" + why_no_level_folder(root) + "; " +
                kDatasetExample;
    return out;
  }
  if (level) {
    std::string present;
    for (const auto& [n, folder] : levels)
      present += (present.empty() ? "" : ", ") + folder.filename().string();
    std::erase_if(levels, [&](const auto& entry) { return entry.first != *level; });
    if (levels.empty()) {
      out.error = root.string() + ": no level" + std::to_string(*level) + " folder found (it has " +
                  present + ")";
      return out;
    }
  }

  for (const auto& [n, folder] : levels) collect_level(n, folder, root, out);
  // Two folders may name one level ("level1", "level01"); keep the first id seen.
  std::stable_sort(out.problems.begin(), out.problems.end(),
                   [](const ProblemRef& a, const ProblemRef& b) {
                     return std::tie(a.level, a.id) < std::tie(b.level, b.id);
                   });
  for (size_t i = 1; i < out.problems.size();) {
    const ProblemRef& a = out.problems[i - 1];
    const ProblemRef& b = out.problems[i];
    if (a.level == b.level && a.id == b.id) {
      out.warnings.push_back(relative_name(a.path, root) + " and " + relative_name(b.path, root) +
                             " both have id " + std::to_string(a.id) + "; keeping the first");
      out.problems.erase(out.problems.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (out.problems.empty())
    out.error = root.string() + ": no problem files (<id>_<Name>.py) in its level folders; " +
                kDatasetExample;
  return out;
}

RunDiscovery discover_run(const fs::path& run_dir, std::optional<int> level) {
  RunDiscovery out;
  out.error = folder_problem(run_dir, kRunExample);
  if (!out.error.empty()) return out;

  // (level, problem, sample) -> the preferred file and its rank.
  std::map<std::tuple<int, int, int>, std::pair<int, fs::path>> chosen;
  size_t seen = 0;
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(run_dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) files.push_back(it->path());
  }
  if (ec)
    out.warnings.push_back("cannot list everything in " + run_dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());

  std::vector<std::string> ignored;  // files that look like solutions but are not named as samples
  for (const fs::path& path : files) {
    std::optional<RunFileName> name = parse_run_file_name(path.filename().string());
    if (!name) {
      std::string ext = lower(path.extension().string());
      // kbv generate's own files beside the samples (sidecars, raw answers) are not near misses.
      bool generated = path.filename().string().find("_response.") != std::string::npos;
      if (!generated && (ext == ".py" || ext == ".md" || ext == ".txt" || ext == ".markdown"))
        ignored.push_back(path.filename().string());
      continue;
    }
    ++seen;
    if (level && name->level != *level) continue;
    auto key = std::make_tuple(name->level, name->problem, name->sample);
    auto found = chosen.find(key);
    if (found == chosen.end()) {
      chosen.emplace(key, std::make_pair(name->rank, path));
      continue;
    }
    auto& [rank, kept] = found->second;
    // A generated sample's raw answer beside its code is the expected layout: no warning.
    bool raw_beside_code = (name->rank == kResponseRank) != (rank == kResponseRank);
    fs::path dropped = path;
    if (name->rank < rank) {
      dropped = kept;
      kept = path;
      rank = name->rank;
    }
    if (raw_beside_code) continue;
    out.warnings.push_back(kept.filename().string() + " and " + dropped.filename().string() +
                           " are the same sample; using " + kept.filename().string());
  }

  for (const auto& [key, entry] : chosen) {
    const auto& [l, p, s] = key;
    out.samples.push_back(SampleRef{l, p, s, entry.second});
  }
  std::string ignored_list;
  for (size_t i = 0; i < ignored.size() && i < 5; ++i) ignored_list += (i ? ", " : "") + ignored[i];
  if (ignored.size() > 5) ignored_list += fmt::format(" and {} more", ignored.size() - 5);
  if (!ignored.empty() && seen > 0)
    out.warnings.push_back(fmt::format("{} file(s) ignored, not named level_<L>_problem_<P>_sample_<S>_kernel.py: {}",
                                       ignored.size(), ignored_list));
  if (seen == 0)
    out.error = run_dir.string() + ": no level_<L>_problem_<P>_sample_<S>_kernel.py files" +
                (ignored.empty() ? "" : fmt::format(" ({} other file(s), not named so: {})", ignored.size(), ignored_list)) +
                "; " + kRunExample;
  else if (out.samples.empty())
    out.error = run_dir.string() + ": no samples of level " + std::to_string(*level) + " (" +
                std::to_string(seen) + " sample files of other levels)";
  return out;
}

bool ProblemSelection::takes(const ProblemRef& p) const {
  if (empty()) return true;
  for (const auto& [first, last] : ids)
    if (p.id >= first && p.id <= last) return true;
  std::string name = lower(p.name);
  for (const auto& part : names)
    if (name.find(part) != std::string::npos) return true;
  return false;
}

std::optional<ProblemSelection> parse_selection(const std::string& spec, std::string& error) {
  ProblemSelection out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item(trim(std::string_view(spec).substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t dash = item.find('-');
    std::optional<int> a = parse_digits(item.substr(0, dash));
    if (a && dash == std::string::npos) {
      out.ids.emplace_back(*a, *a);
    } else if (a) {
      std::optional<int> b = parse_digits(item.substr(dash + 1));
      if (!b) {
        error = "--only " + spec + ": '" + item + "' is not a range of ids (e.g. 23-25)";
        return std::nullopt;
      }
      if (*b < *a) {
        error = "--only " + spec + ": '" + item + "' goes down; a range goes up (e.g. " + std::to_string(*b) + "-" +
                std::to_string(*a) + ")";
        return std::nullopt;
      }
      out.ids.emplace_back(*a, *b);
    } else {
      out.names.push_back(lower(item));
    }
  }
  if (out.empty()) {
    error = "--only '" + spec + "': give problem ids, ranges or parts of names, e.g. 19,23-25,ReLU";
    return std::nullopt;
  }
  return out;
}

std::string select_problems(Discovery& dataset, const ProblemSelection& selection, const std::string& spec) {
  if (selection.empty()) return "";
  std::erase_if(dataset.problems, [&](const ProblemRef& p) { return !selection.takes(p); });
  if (dataset.problems.empty()) return "--only " + spec + ": no problem of the dataset matches";
  return "";
}

Extraction extract_code(std::string_view text) {
  Extraction out;
  auto [reason_begin, reason_end] = find_reasoning(text);

  std::optional<Fence> open;  // the block being read, if any
  bool open_in_reasoning = false;
  bool reading_chosen = false;                         // the block being read is the one extracted
  std::vector<std::pair<std::string_view, int>> code;  // its lines and their numbers
  int code_line = 0;                                   // the line after its opening fence

  for (const Line& line : numbered_lines(text)) {
    std::string_view content = without_cr(text.substr(line.begin, line.end - line.begin));
    bool overlaps_reasoning = reason_end > 0 && line.end >= reason_begin && line.begin < reason_end;
    bool ends_reasoning = overlaps_reasoning && line.end >= reason_end;

    if (open) {
      if (open_in_reasoning && ends_reasoning) {
        open.reset();  // a block left open inside the reasoning ends with it
      } else {
        if (closes(content, *open)) {
          open.reset();
          reading_chosen = false;
        } else if (std::optional<std::string_view> last = glued_close(content, *open)) {
          if (reading_chosen) code.emplace_back(dedent(*last, open->indent), line.number);
          open.reset();
          reading_chosen = false;
        } else if (reading_chosen) {
          code.emplace_back(dedent(content, open->indent), line.number);
        }
        continue;
      }
    }

    // Outside any block. Lines of the reasoning section are skipped, except the text after
    // its closing tag, which reads as a line of its own.
    bool in_reasoning = overlaps_reasoning && !ends_reasoning;
    if (ends_reasoning) content = without_cr(text.substr(reason_end, line.end - reason_end));
    std::optional<Fence> fence = opening_fence(content);
    if (!fence) continue;
    open = fence;
    open_in_reasoning = in_reasoning;
    if (in_reasoning) {
      ++out.skipped_in_reasoning;
      continue;
    }
    ++out.block_count;
    if (out.found) continue;
    out.found = true;
    out.block_index = out.block_count - 1;
    reading_chosen = true;
    code_line = line.number + 1;
    if (is_language_tag(fence->info)) {
      out.language_tag = lower(fence->info);
    } else if (!fence->info.empty()) {
      // Not a language tag: KernelBench keeps it as code ("```import torch").
      code.emplace_back(fence->info, line.number);
    }
  }
  if (!out.found) return out;

  // Leading and trailing blank lines are dropped (KernelBench strips the block).
  size_t first = 0, last = code.size();
  while (first < last && trim(code[first].first).empty()) ++first;
  while (last > first && trim(code[last - 1].first).empty()) --last;
  out.first_line = first < last ? code[first].second : code_line;
  for (size_t i = first; i < last; ++i) {
    out.code += code[i].first;
    out.code += '\n';
  }
  return out;
}

SolutionSource load_solution(const fs::path& path) {
  SolutionSource out;
  FileText file = read_file(path);
  if (!file.ok) {
    out.error = file.error;
    return out;
  }
  std::optional<std::string> text = std::move(file.text);
  std::string ext = lower(path.extension().string());
  if (ext != ".md" && ext != ".txt" && ext != ".markdown") {
    out.ok = true;
    out.code = std::move(*text);
    out.origin = "file";
    return out;
  }

  Extraction found = extract_code(*text);
  if (!found.found) {
    out.error = path.string() + ": no fenced code block in the answer";
    if (found.skipped_in_reasoning > 0)
      out.error += " (" + std::to_string(found.skipped_in_reasoning) +
                   " inside the reasoning section, which are not used)";
    return out;
  }
  out.origin = "markdown block " + std::to_string(found.block_index + 1) + " of " +
               std::to_string(found.block_count);
  if (!found.language_tag.empty()) out.origin += " (" + found.language_tag + ")";
  out.origin += ", line " + std::to_string(found.first_line);
  if (found.code.empty()) {
    out.error = path.string() + ": the " + out.origin + " is empty";
    return out;
  }
  out.ok = true;
  out.code = std::move(found.code);
  out.first_line = found.first_line;
  return out;
}

}  // namespace kbv
