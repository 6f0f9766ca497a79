#include "generate/prompt.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/hash.h"

namespace kbv {

namespace fs = std::filesystem;

namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

std::string_view trim(std::string_view s) {
  const char* space = " \t\r\n";
  size_t b = s.find_first_not_of(space);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(space) - b + 1);
}

// Text without trailing newlines and spaces, for a value placed inside a fenced block.
std::string trim_end(std::string_view s) {
  size_t end = s.find_last_not_of(" \t\r\n");
  return std::string(end == std::string_view::npos ? std::string_view{} : s.substr(0, end + 1));
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Top-level statements of a Python file, found line by line: a statement starts at a line in
// column 0 that is not inside brackets, a string or a backslash continuation; a decorator stays
// with the definition below it.
struct Statement {
  enum class Kind { blank, comment, code };
  Kind kind = Kind::code;
  size_t first = 0, last = 0;   // line indices, inclusive
  std::vector<std::string> targets;  // names assigned at top level ("batch_size"), if an assignment
  std::string defines;               // "get_inputs" for `def get_inputs(...)`
  std::string value;                 // the right-hand side of a one-line assignment
};

// Tracks brackets and strings across lines.
struct Scanner {
  int depth = 0;
  std::string triple;  // the open triple quote, if any
  bool continued = false;

  bool in_statement() const { return depth > 0 || !triple.empty() || continued; }

  void scan(std::string_view line) {
    continued = false;
    size_t i = 0;
    while (i < line.size()) {
      if (!triple.empty()) {
        if (line[i] == '\\') {
          i += 2;
        } else if (line.substr(i, 3) == triple) {
          i += 3;
          triple.clear();
        } else {
          ++i;
        }
        continue;
      }
      char c = line[i];
      if (c == '#') return;
      if (c == '"' || c == '\'') {
        if (line.substr(i, 3) == std::string(3, c)) {
          triple = std::string(3, c);
          i += 3;
          continue;
        }
        ++i;
        while (i < line.size() && line[i] != c) i += line[i] == '\\' ? 2 : 1;
        ++i;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      if (c == '\\' && i + 1 == trim_end(line).size()) continued = true;
      ++i;
    }
  }
};

// Names assigned by a top-level statement's first line: "a = 1", "a: int = 1", "a, b = 1, 2".
std::vector<std::string> assignment_targets(std::string_view line, std::string& value) {
  std::vector<std::string> names;
  // The first '=' that is not part of ==, <=, >=, != and not inside brackets or strings.
  int depth = 0;
  size_t eq = std::string_view::npos;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '"' || c == '\'' || c == '#') return {};
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == '=' && depth == 0) {
      bool compare = (i + 1 < line.size() && line[i + 1] == '=') ||
                     (i > 0 && (line[i - 1] == '=' || line[i - 1] == '<' || line[i - 1] == '>' ||
                                line[i - 1] == '!'));
      if (!compare) {
        eq = i;
        break;
      }
    }
  }
  if (eq == std::string_view::npos) return {};
  std::string_view lhs = line.substr(0, eq);
  if (!lhs.empty() && (lhs.back() == '+' || lhs.back() == '-' || lhs.back() == '*' || lhs.back() == '/' ||
                       lhs.back() == '%' || lhs.back() == '|' || lhs.back() == '&' || lhs.back() == '^' ||
                       lhs.back() == '@'))
    lhs.remove_suffix(1);  // augmented assignment: still a module-level value
  if (size_t colon = lhs.find(':'); colon != std::string_view::npos) lhs = lhs.substr(0, colon);
  size_t pos = 0;
  while (pos <= lhs.size()) {
    size_t comma = lhs.find(',', pos);
    std::string_view part = trim(lhs.substr(pos, comma == std::string_view::npos ? lhs.size() - pos : comma - pos));
    if (!part.empty()) {
      for (char c : part)
        if (!is_name_char(c)) return {};
      if (!is_name_start(part[0])) return {};
      names.emplace_back(part);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  value = std::string(trim(line.substr(eq + 1)));
  return names;
}

std::vector<Statement> top_level_statements(const std::vector<std::string_view>& lines) {
  std::vector<Statement> out;
  Scanner scanner;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    std::string_view t = trim(line);
    bool starts_statement = !scanner.in_statement() && !t.empty() && line[0] != ' ' && line[0] != '\t';
    if (!scanner.in_statement() && (t.empty() || (starts_statement && t[0] == '#'))) {
      // A blank line or a comment in column 0 followed by indented code is inside the
      // definition above (between two methods, say); otherwise it stands alone.
      size_t next = i + 1;
      while (next < lines.size() && (trim(lines[next]).empty() || lines[next].starts_with("#"))) ++next;
      bool inside = !out.empty() && out.back().kind == Statement::Kind::code && next < lines.size() &&
                    (lines[next][0] == ' ' || lines[next][0] == '\t');
      if (inside)
        out.back().last = i;
      else
        out.push_back(Statement{t.empty() ? Statement::Kind::blank : Statement::Kind::comment, i, i, {}, {}, {}});
      continue;
    }
    bool after_decorator = !out.empty() && out.back().kind == Statement::Kind::code &&
                           lines[out.back().first].starts_with("@");
    if (starts_statement && !after_decorator) {
      Statement s;
      s.first = s.last = i;
      if (t.starts_with("def ") || t.starts_with("async def ")) {
        std::string_view rest = t.substr(t.find("def ") + 4);
        size_t n = 0;
        while (n < rest.size() && is_name_char(rest[n])) ++n;
        s.defines = std::string(rest.substr(0, n));
      } else if (!t.starts_with("@")) {
        s.targets = assignment_targets(t, s.value);
      }
      out.push_back(std::move(s));
    } else if (starts_statement && after_decorator && (t.starts_with("def ") || t.starts_with("async def "))) {
      std::string_view rest = t.substr(t.find("def ") + 4);
      size_t n = 0;
      while (n < rest.size() && is_name_char(rest[n])) ++n;
      out.back().defines = std::string(rest.substr(0, n));
      out.back().last = i;
    } else if (out.empty() || out.back().kind != Statement::Kind::code) {
      // An indented line with no statement above it (a malformed file): keep it as code.
      out.push_back(Statement{Statement::Kind::code, i, i, {}, {}, {}});
    } else {
      out.back().last = i;
    }
    scanner.scan(line);
  }
  return out;
}

bool is_kbv_setting(const Statement& s) {
  for (const std::string& t : s.targets)
    if (t.starts_with("KBV_")) return true;
  return false;
}

// Names a statement's code reads and names it binds itself (parameters, local assignments),
// strings and comments left out. Enough to tell whether a class uses a module-level constant.
struct Words {
  std::set<std::string> used, bound;
};

Words words_of(std::string_view code) {
  Words w;
  std::string triple;
  std::string prev;            // the previous identifier
  char prev_punct = '\n';      // the last non-space character that was not part of a name
  bool after_def = false;      // inside the parameter list of a def
  int depth = 0, def_depth = 0;
  size_t i = 0;
  while (i < code.size()) {
    char c = code[i];
    if (!triple.empty()) {
      if (c == '\\') {
        i += 2;
      } else if (code.substr(i, 3) == triple) {
        i += 3;
        triple.clear();
      } else {
        ++i;
      }
      continue;
    }
    if (c == '#') {
      while (i < code.size() && code[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      if (code.substr(i, 3) == std::string(3, c)) {
        triple = std::string(3, c);
        i += 3;
        continue;
      }
      ++i;
      while (i < code.size() && code[i] != c && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
      ++i;
      prev_punct = c;
      continue;
    }
    if (is_name_start(c)) {
      size_t b = i;
      while (i < code.size() && is_name_char(code[i])) ++i;
      std::string name(code.substr(b, i - b));
      size_t n = i;
      while (n < code.size() && (code[n] == ' ' || code[n] == '\t')) ++n;
      bool assigned = n < code.size() && code[n] == '=' && (n + 1 >= code.size() || code[n + 1] != '=');
      bool line_start = prev_punct == '\n';
      bool parameter = after_def && depth == def_depth + 1 && (prev_punct == '(' || prev_punct == ',' || prev_punct == '*');
      bool keyword = assigned && depth > 0;  // f(dim=1): names the argument, reads nothing
      if (parameter || (line_start && assigned) || prev == "for" || prev == "as" || prev == "def" || prev == "class")
        w.bound.insert(name);
      else if (prev_punct != '.' && !keyword)
        w.used.insert(name);
      if (name == "def") {
        after_def = true;
        def_depth = depth;
      }
      prev = name;
      prev_punct = 'a';
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      --depth;
      if (after_def && depth == def_depth) after_def = false;
    }
    if (c != ' ' && c != '\t' && c != '\r') {
      // A newline inside brackets is a continuation: no line start, and the punctuation before
      // it (the comma before a parameter on the next line) still counts.
      if (c != '\n' || depth == 0) prev_punct = c;
      prev.clear();
    }
    ++i;
  }
  return w;
}

std::string example_name(const std::string& file, const std::string& suffix) {
  return file.substr(0, file.size() - suffix.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
std::optional<std::string> fill_template(std::string_view text, const std::map<std::string, std::string>& vars,
                                         const std::string& origin, std::string& error) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string_view::npos) break;
    size_t n = open + 2;
    while (n < text.size() && text[n] == ' ') ++n;
    size_t name_begin = n;
    if (n < text.size() && is_name_start(text[n])) {
      while (n < text.size() && is_name_char(text[n])) ++n;
    }
    size_t name_end = n;
    while (n < text.size() && text[n] == ' ') ++n;
    if (name_end == name_begin || text.substr(n, 2) != "}}") {
      out.append(text.substr(i, open + 2 - i));  // not a placeholder: kept as is
      i = open + 2;
      continue;
    }
    std::string name(text.substr(name_begin, name_end - name_begin));
    auto it = vars.find(name);
    if (it == vars.end()) {
      size_t line = 1;
      for (size_t k = 0; k < open; ++k) line += text[k] == '\n';
      std::string known;
      for (const auto& [k, v] : vars) known += (known.empty() ? "" : ", ") + k;
      error = origin + ":" + std::to_string(line) + ": unknown placeholder {{" + name + "}} (known here: " + known + ")";
      return std::nullopt;
    }
    out.append(text.substr(i, open - i));
    out.append(it->second);
    i = n + 2;
  }
  out.append(text.substr(i));
  return out;
}

bool marked_input_blind(std::string_view problem_source) {
  std::vector<std::string_view> lines = split_lines(problem_source);
  for (const Statement& s : top_level_statements(lines))
    for (const std::string& t : s.targets)
      if (t == "KBV_INPUT_BLIND") return s.value == "True" || s.value.starts_with("True ") || s.value.starts_with("True#");
  return false;
}

std::string problem_for_prompt(std::string_view problem_source, bool input_blind) {
  std::vector<std::string_view> lines = split_lines(problem_source);
  std::vector<Statement> statements = top_level_statements(lines);
  std::vector<bool> keep(statements.size(), true);
  auto text_of = [&](const Statement& s) {
    return std::string_view(lines[s.first].data(), lines[s.last].data() + lines[s.last].size() - lines[s.first].data());
  };
  for (size_t k = 0; k < statements.size(); ++k) {
    const Statement& s = statements[k];
    if (s.kind != Statement::Kind::code) continue;
    bool drop = is_kbv_setting(s);
    if (input_blind && (!s.targets.empty() || s.defines == "get_inputs" || s.defines == "get_init_inputs")) drop = true;
    keep[k] = !drop;
  }
  if (input_blind) {
    // A constant that the kept code itself reads (a class using a module global) stays, so
    // that the code sent is still valid Python; repeated until nothing more is needed.
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> needed;
      for (size_t k = 0; k < statements.size(); ++k) {
        if (!keep[k] || statements[k].kind != Statement::Kind::code) continue;
        Words w = words_of(text_of(statements[k]));
        for (const std::string& name : w.used)
          if (!w.bound.contains(name)) needed.insert(name);
      }
      for (size_t k = 0; k < statements.size(); ++k) {
        const Statement& s = statements[k];
        if (keep[k] || s.targets.empty() || is_kbv_setting(s)) continue;
        for (const std::string& t : s.targets)
          if (needed.contains(t)) {
            keep[k] = true;
            changed = true;
          }
      }
    }
  }
  for (size_t k = 0; k < statements.size(); ++k) {
    if (keep[k] || statements[k].kind != Statement::Kind::code) continue;
    // The comment lines right above a dropped statement describe it.
    for (size_t j = k; j > 0 && statements[j - 1].kind == Statement::Kind::comment; --j) keep[j - 1] = false;
  }
  std::string out;
  int blank_run = 0;
  for (size_t k = 0; k < statements.size(); ++k) {
    if (!keep[k]) continue;
    const Statement& s = statements[k];
    for (size_t l = s.first; l <= s.last; ++l) {
      bool blank = trim(lines[l]).empty();
      blank_run = blank ? blank_run + 1 : 0;
      if (blank && (blank_run > 2 || out.empty())) continue;
      out.append(lines[l]);
      out.push_back('\n');
    }
  }
  return trim_end(out) + "\n";
}

std::optional<PromptTemplates> load_prompt_templates(const PromptOptions& options, std::string& error) {
  PromptTemplates t;
  t.options = options;
  if (options.variant != "zero_shot" && options.variant != "one_shot" && options.variant != "few_shot") {
    error = "unknown prompt variant '" + options.variant + "' (zero_shot, one_shot or few_shot)";
    return std::nullopt;
  }
  if (options.precision != "fp32" && options.precision != "bf16" && options.precision != "fp16") {
    error = "unknown precision '" + options.precision + "' (fp32, bf16 or fp16)";
    return std::nullopt;
  }
  if (options.device != "cuda" && options.device != "cpu") {
    error = "unknown device '" + options.device + "' (cuda or cpu)";
    return std::nullopt;
  }
  const bool cpu = options.device == "cpu";
  if (cpu && !options.hardware.empty()) {
    error = "--hardware " + options.hardware + " describes a GPU; leave it out with --device cpu";
    return std::nullopt;
  }
  // With --device cpu, the CPU templates of cpu/ replace the files of the same name; the main
  // template and the examples must be CPU ones (a CUDA example would ask for CUDA).
  const std::string own = cpu ? "cpu/" : "";
  auto shared = [&](const std::string& name) { return cpu && fs::exists(options.dir / own / name) ? own + name : name; };
  auto read = [&](const std::string& name, const std::string& role = {}) -> bool {
    FileText f = read_file(options.dir / name);
    if (!f.ok) {
      error = f.error + " (a prompt template; --prompts names the template folder)";
      return false;
    }
    t.files[name] = std::move(f.text);
    t.names[role.empty() ? name : role] = name;
    return true;
  };
  const std::string precision_note = "precision_" + options.precision + ".md";
  if (!read(own + options.variant + ".md", options.variant + ".md") ||
      !read(shared(precision_note), precision_note) || !read(shared("input_blind.md"), "input_blind.md"))
    return std::nullopt;
  if (fs::exists(options.dir / shared("system.md")) && !read(shared("system.md"), "system.md")) return std::nullopt;

  if (options.variant != "zero_shot") {
    // Examples: examples/<name>_reference.py with examples/<name>_solution.py, in name order.
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(options.dir / own / "examples", ec), end; !ec && it != end; it.increment(ec)) {
      std::string file = it->path().filename().string();
      if (file.ends_with("_reference.py")) names.push_back(example_name(file, "_reference.py"));
    }
    std::sort(names.begin(), names.end());
    if (names.empty()) {
      error = (options.dir / own / "examples").string() +
              ": no example pairs (<name>_reference.py and <name>_solution.py) for the " + options.variant + " prompt";
      return std::nullopt;
    }
    if (options.variant == "one_shot") names.resize(1);
    for (const std::string& name : names) {
      std::string ref = own + "examples/" + name + "_reference.py", sol = own + "examples/" + name + "_solution.py";
      if (!read(ref) || !read(sol)) return std::nullopt;
      t.examples.emplace_back(t.files[ref], t.files[sol]);
    }
    if (options.variant == "few_shot" && !read(shared("example.md"), "example.md")) return std::nullopt;
  }

  if (!options.hardware.empty()) {
    if (!read("hardware.md") || !read("hardware.json")) return std::nullopt;
    nlohmann::ordered_json specs = nlohmann::ordered_json::parse(t.files["hardware.json"], nullptr, false);
    if (!specs.is_object()) {
      error = (options.dir / "hardware.json").string() + ": not a JSON object of GPU name -> specs";
      return std::nullopt;
    }
    const nlohmann::ordered_json* entry = nullptr;
    std::string known;
    auto lower = [](std::string s) {
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    for (const auto& [key, value] : specs.items()) {
      if (key.starts_with("_")) continue;
      known += (known.empty() ? "" : ", ") + key;
      if (lower(key) == lower(options.hardware)) entry = &value;
    }
    if (!entry) {
      error = "--hardware " + options.hardware + ": not in " + (options.dir / "hardware.json").string() +
              " (it has " + known + "; add an entry there for another GPU)";
      return std::nullopt;
    }
    if (!entry->is_object()) {
      error = (options.dir / "hardware.json").string() + ": the entry " + options.hardware + " is not an object";
      return std::nullopt;
    }
    t.hardware_name = entry->contains("name") && (*entry)["name"].is_string() ? (*entry)["name"].get<std::string>()
                                                                                : options.hardware;
    for (const auto& [field, value] : entry->items()) {
      if (field == "name" || field.starts_with("_")) continue;
      std::string v = value.is_string() ? value.get<std::string>() : value.dump();
      t.hardware_specs += (t.hardware_specs.empty() ? "" : "\n") + ("- " + field + ": " + v);
    }
  }

  std::vector<std::string> parts;
  for (const auto& [name, text] : t.files) {
    parts.push_back(name);
    parts.push_back(text);
  }
  parts.push_back("hardware=" + options.hardware);
  t.hash = sha256_hex_parts(parts);
  return t;
}

std::optional<Prompt> render_prompt(const PromptTemplates& t, std::string_view problem_source, std::string& error) {
  const PromptOptions& o = t.options;
  // A template by its role, and the file it came from (for error messages).
  auto name_of = [&](const std::string& role) {
    auto it = t.names.find(role);
    return it == t.names.end() ? role : it->second;
  };
  auto file = [&](const std::string& role) -> const std::string& { return t.files.at(name_of(role)); };
  auto origin = [&](const std::string& role) { return (o.dir / name_of(role)).string(); };
  Prompt p;
  p.input_blind = o.input_blind_all || marked_input_blind(problem_source);
  std::map<std::string, std::string> vars;
  vars["problem"] = trim_end(problem_for_prompt(problem_source, p.input_blind));
  vars["precision_note"] = file("precision_" + o.precision + ".md");
  vars["input_note"] = p.input_blind ? file("input_blind.md") : "";
  vars["hardware_block"] = "";
  if (!o.hardware.empty()) {
    auto block = fill_template(t.files.at("hardware.md"), {{"gpu_name", t.hardware_name}, {"gpu_specs", t.hardware_specs}},
                               (o.dir / "hardware.md").string(), error);
    if (!block) return std::nullopt;
    vars["hardware_block"] = *block;
  }
  if (o.variant == "one_shot") {
    vars["example_reference"] = trim_end(t.examples[0].first);
    vars["example_solution"] = trim_end(t.examples[0].second);
  } else if (o.variant == "few_shot") {
    std::string all;
    for (size_t i = 0; i < t.examples.size(); ++i) {
      auto one = fill_template(file("example.md"),
                               {{"index", std::to_string(i + 1)},
                                {"reference", trim_end(t.examples[i].first)},
                                {"solution", trim_end(t.examples[i].second)}},
                               origin("example.md"), error);
      if (!one) return std::nullopt;
      all += *one;
    }
    vars["examples"] = all;
  }
  auto text = fill_template(file(o.variant + ".md"), vars, origin(o.variant + ".md"), error);
  if (!text) return std::nullopt;
  p.text = std::move(*text);
  p.hash = sha256_hex(p.text);
  return p;
}

}  // namespace kbv
