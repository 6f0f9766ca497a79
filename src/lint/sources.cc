#include "lint/sources.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "util/fs.h"

namespace kbv {
namespace fs = std::filesystem;
namespace {

// The value of a Python expression as far as it can be known without running it.
struct Value {
  enum Kind { Str, List, Unknown } kind = Unknown;
  SourceText str;
  std::vector<Value> items;
  bool partial = false;   // a Str with parts only known at runtime (replaced by "0")
  std::string unknown;    // the first expression that could not be resolved
  int unknown_line = 0;

  static Value unknown_at(std::string expr, int line) {
    Value v;
    v.unknown = std::move(expr);
    v.unknown_line = line;
    return v;
  }
};

class Eval {
 public:
  explicit Eval(const PyFacts& f) : f_(f), t_(f.t()) {}

  Value expr(int b, int e, int stmt, int depth) {
    // depth bounds the recursion through names (a = b; b = a) and nesting.
    if (depth > 100 || b >= e) return Value::unknown_at(text(b, e), line(b));
    auto parts = split_top(b, e, ",");
    if (parts.size() > 1 || (parts.size() == 1 && parts[0].second < e && is_op(t_[e - 1], ","))) {
      Value list;
      list.kind = Value::List;
      for (auto [x, y] : parts) list.items.push_back(expr(x, y, stmt, depth + 1));
      return list;
    }
    for (int k = b, d = 0; k < e; ++k) {  // a conditional expression: either branch may be used
      d += opens(t_[k]) - closes(t_[k]);
      if (d == 0 && (is_name(t_[k], "if") || is_name(t_[k], "for")))
        return Value::unknown_at(text(b, e), line(b));
    }
    auto terms = split_top(b, e, "+");
    Value out;
    for (size_t n = 0; n < terms.size(); ++n) {
      Value v = term(terms[n].first, terms[n].second, stmt, depth + 1);
      if (v.kind == Value::Unknown) return v;
      if (n == 0) {
        out = std::move(v);
        continue;
      }
      if (v.kind != out.kind) return Value::unknown_at(text(b, e), line(b));
      if (out.kind == Value::Str) {
        out.str.append(v.str);
        out.partial = out.partial || v.partial;
        if (out.unknown.empty()) out.unknown = v.unknown, out.unknown_line = v.unknown_line;
      } else {
        for (auto& i : v.items) out.items.push_back(std::move(i));
      }
    }
    return out;
  }

 private:
  const PyFacts& f_;
  const std::vector<PyToken>& t_;

  static int opens(const PyToken& x) { return x.kind == PyKind::Op && (x.text == "(" || x.text == "[" || x.text == "{"); }
  static int closes(const PyToken& x) { return x.kind == PyKind::Op && (x.text == ")" || x.text == "]" || x.text == "}"); }

  std::vector<std::pair<int, int>> split_top(int b, int e, const char* op) {
    std::vector<std::pair<int, int>> out;
    int d = 0, start = b;
    for (int k = b; k <= e; ++k) {
      if (k < e) {
        d += opens(t_[k]) - closes(t_[k]);
        if (!(d == 0 && is_op(t_[k], op) && !t_[k].in_field)) continue;
      }
      if (k > start) out.push_back({start, k});
      start = k + 1;
    }
    return out;
  }

  int line(int k) const { return k < static_cast<int>(t_.size()) ? t_[k].line : 0; }

  std::string text(int b, int e) const {
    std::string s;
    for (int k = b; k < e && k < static_cast<int>(t_.size()); ++k) {
      if (t_[k].in_field) continue;
      if (!s.empty() && (t_[k].kind == PyKind::Name || t_[k].kind == PyKind::Number) &&
          (t_[k - 1].kind == PyKind::Name || t_[k - 1].kind == PyKind::Number))
        s += ' ';
      s += t_[k].text;
    }
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
  }

  // The spliced field groups right after the string token at `k` (see analyze_python): as many
  // '(' ... ')' groups as the string has fields, in the order of PyString::fields.
  std::vector<std::pair<int, int>> groups_after(int k) const {
    std::vector<std::pair<int, int>> g;
    size_t want = f_.lex.strings[t_[k].str].fields.size();
    int p = k + 1;
    while (g.size() < want && p < static_cast<int>(t_.size()) && is_op(t_[p], "(") && t_[p].in_field) {
      int close = match_bracket(t_, p);
      g.push_back({p, close});
      p = close + 1;
    }
    return g;
  }

  // A string literal (an f-string with its fields resolved where possible) at k; *next after it.
  Value literal(int k, int stmt, int depth, int* next) {
    const PyString& ps = f_.lex.strings[t_[k].str];
    auto groups = groups_after(k);
    *next = groups.empty() ? k + 1 : groups.back().second + 1;
    Value v;
    v.kind = Value::Str;
    if (!ps.fstring) {
      v.str = ps.value;
      return v;
    }
    for (const PyPiece& piece : ps.pieces) {
      if (!piece.is_field) {
        v.str.append(piece.literal);
        continue;
      }
      Value fv;
      if (piece.field < static_cast<int>(groups.size()))
        fv = expr(groups[piece.field].first + 1, groups[piece.field].second, stmt, depth + 1);
      if (fv.kind == Value::Str) {
        v.str.append(fv.str);
        v.partial = v.partial || fv.partial;
      } else {
        int l = ps.fields[piece.field].line;
        v.str.put('0', l);
        v.partial = true;
        if (v.unknown.empty()) v.unknown = ps.fields[piece.field].expr, v.unknown_line = l;
      }
    }
    return v;
  }

  Value term(int b, int e, int stmt, int depth) {
    if (b >= e) return Value::unknown_at("", line(b));
    Value base;
    int p = b;
    const PyToken& x = t_[b];
    if (x.kind == PyKind::String) {
      base.kind = Value::Str;
      while (p < e && t_[p].kind == PyKind::String) {  // implicit concatenation
        int next = p;
        Value s = literal(p, stmt, depth, &next);
        base.str.append(s.str);
        base.partial = base.partial || s.partial;
        if (base.unknown.empty()) base.unknown = s.unknown, base.unknown_line = s.unknown_line;
        p = next;
      }
    } else if (x.kind == PyKind::Number) {
      base.kind = Value::Str;
      base.str.put(x.text, x.line);
      p = b + 1;
    } else if (is_op(x, "(")) {
      int close = match_bracket(t_, b);
      base = expr(b + 1, close, stmt, depth + 1);
      p = close + 1;
    } else if (is_op(x, "[")) {
      int close = match_bracket(t_, b);
      base = expr(b + 1, close, stmt, depth + 1);
      if (base.kind != Value::Unknown && base.kind != Value::List) {
        Value list;
        list.kind = Value::List;
        list.items.push_back(std::move(base));
        base = std::move(list);
      }
      if (close == b + 1) base.kind = Value::List;  // []
      p = close + 1;
    } else if (x.kind == PyKind::Name) {
      int next = b;
      Path path = dotted_at(t_, b, e, &next);
      if (next < e && is_op(t_[next], "(")) {
        int close = match_bracket(t_, next);
        Path c = f_.canonical(path);
        std::string last = c.back();
        if (last == "dedent" || last == "cleandoc" || join(c) == "str") {
          auto args = split_commas(t_, next + 1, close);
          if (args.empty()) return Value::unknown_at(text(b, e), line(b));
          base = expr(args[0].first, args[0].second, stmt, depth + 1);
        } else {
          return Value::unknown_at(text(b, e), line(b));
        }
        p = close + 1;
      } else {
        base = lookup(path, stmt, t_[b].line, depth + 1);
        p = next;
      }
    } else {
      return Value::unknown_at(text(b, e), line(b));
    }
    // Methods applied to the value.
    while (p < e && base.kind != Value::Unknown) {
      if (is_op(t_[p], "%")) {  // printf-style formatting: the text stays, the values are unknown
        base.partial = true;
        if (base.unknown.empty()) base.unknown = text(p + 1, e), base.unknown_line = line(p);
        break;
      }
      if (!(is_op(t_[p], ".") && p + 2 < e && t_[p + 1].kind == PyKind::Name && is_op(t_[p + 2], "(")))
        return Value::unknown_at(text(b, e), line(b));
      std::string method = t_[p + 1].text;
      int open = p + 2, close = match_bracket(t_, open);
      auto args = split_commas(t_, open + 1, close);
      if (method == "strip" || method == "lstrip" || method == "rstrip" || method == "encode" || method == "decode") {
        // whitespace at the ends does not matter to the C++ tokenizer
      } else if (method == "join" && base.kind == Value::Str && args.size() == 1) {
        Value list = expr(args[0].first, args[0].second, stmt, depth + 1);
        if (list.kind != Value::List) return list.kind == Value::Unknown ? list : Value::unknown_at(text(b, e), line(b));
        Value joined;
        joined.kind = Value::Str;
        for (size_t n = 0; n < list.items.size(); ++n) {
          if (list.items[n].kind != Value::Str) return Value::unknown_at(text(b, e), line(b));
          if (n > 0) joined.str.append(base.str);
          joined.str.append(list.items[n].str);
          joined.partial = joined.partial || list.items[n].partial;
          if (joined.unknown.empty()) joined.unknown = list.items[n].unknown, joined.unknown_line = list.items[n].unknown_line;
        }
        base = std::move(joined);
      } else if (method == "format" && base.kind == Value::Str) {
        base = format(base, args, stmt, depth);
      } else if (method == "replace" && base.kind == Value::Str && args.size() >= 2) {
        Value from = expr(args[0].first, args[0].second, stmt, depth + 1);
        Value to = expr(args[1].first, args[1].second, stmt, depth + 1);
        if (from.kind != Value::Str || to.kind != Value::Str || from.str.text.empty())
          return Value::unknown_at(text(b, e), line(b));
        base = replace(base, from.str.text, to.str);
      } else {
        return Value::unknown_at(text(b, e), line(b));
      }
      p = close + 1;
    }
    if (p < e) return Value::unknown_at(text(b, e), line(b));
    return base;
  }

  // A copy of `v` with every occurrence of `from` replaced by `to`, lines kept.
  Value replace(const Value& v, const std::string& from, const SourceText& to) {
    Value out;
    out.kind = Value::Str;
    out.partial = v.partial;
    out.unknown = v.unknown;
    out.unknown_line = v.unknown_line;
    int text_line = 1;
    for (size_t k = 0; k < v.str.text.size();) {
      int l = v.str.file_line(text_line);
      if (v.str.text.compare(k, from.size(), from) == 0) {
        out.str.append(to);
        for (char c : from) text_line += c == '\n';
        k += from.size();
        continue;
      }
      out.str.put(v.str.text[k], l);
      if (v.str.text[k] == '\n') ++text_line;
      ++k;
    }
    return out;
  }

  // str.format: {{ }} unescaped, {name} / {0} / {} replaced by resolved arguments ("0" otherwise).
  Value format(const Value& v, const std::vector<std::pair<int, int>>& args, int stmt, int depth) {
    std::vector<Value> positional;
    std::map<std::string, Value> named;
    for (auto [x, y] : args) {
      if (y - x >= 2 && t_[x].kind == PyKind::Name && is_op(t_[x + 1], "="))
        named[t_[x].text] = expr(x + 2, y, stmt, depth + 1);
      else
        positional.push_back(expr(x, y, stmt, depth + 1));
    }
    Value out;
    out.kind = Value::Str;
    out.partial = v.partial;
    out.unknown = v.unknown;
    out.unknown_line = v.unknown_line;
    const std::string& s = v.str.text;
    int text_line = 1;
    size_t auto_index = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      int l = v.str.file_line(text_line);
      if ((s[k] == '{' || s[k] == '}') && k + 1 < s.size() && s[k + 1] == s[k]) {
        out.str.put(s[k], l);
        ++k;
        continue;
      }
      if (s[k] == '{') {
        size_t end = s.find('}', k);
        if (end == std::string::npos) end = s.size();
        std::string field = s.substr(k + 1, end - k - 1);
        field = field.substr(0, field.find_first_of("!:"));
        const Value* arg = nullptr;
        if (field.empty() && auto_index < positional.size()) arg = &positional[auto_index++];
        else if (!field.empty() && std::isdigit(static_cast<unsigned char>(field[0])) &&
                 static_cast<size_t>(std::atoi(field.c_str())) < positional.size())
          arg = &positional[static_cast<size_t>(std::atoi(field.c_str()))];
        else if (named.count(field)) arg = &named[field];
        if (arg && arg->kind == Value::Str) {
          out.str.append(arg->str);
        } else {
          out.str.put('0', l);
          out.partial = true;
          if (out.unknown.empty()) out.unknown = "{" + field + "}", out.unknown_line = l;
        }
        for (size_t c = k; c < end && c < s.size(); ++c) text_line += s[c] == '\n';
        k = end;
        continue;
      }
      out.str.put(s[k], l);
      if (s[k] == '\n') ++text_line;
    }
    return out;
  }

  std::string target_text(int b, int e) const {
    std::string s;
    for (int k = b; k < e; ++k) s += t_[k].text;
    return s;
  }

  // The value a name (or self.attr) has where it is used: its last plain assignment before the
  // use in the same function (else at module level), plus the += that follow it.
  Value lookup(const Path& path, int stmt, int use_line, int depth) {
    std::string want = join(path);
    int scope = stmt >= 0 ? f_.func_of[stmt] : -1;
    int cls = stmt >= 0 ? f_.class_of[stmt] : -1;
    auto matching = [&](bool same_function) {
      std::vector<const PyAssign*> out;
      for (const PyAssign& a : f_.assigns) {
        if (a.op != "=" && a.op != "+=") continue;
        if (a.targets.size() != 1 || target_text(a.targets[0].first, a.targets[0].second) != want) continue;
        int fs = f_.func_of[a.stmt];
        bool ok = path[0] == "self" ? f_.class_of[a.stmt] == cls : (same_function ? fs == scope : fs == -1);
        if (ok) out.push_back(&a);
      }
      return out;
    };
    std::vector<const PyAssign*> cands = matching(true);
    if (cands.empty() && scope >= 0 && path[0] != "self") cands = matching(false);
    if (cands.empty()) return Value::unknown_at(want, use_line);
    int last_plain = -1;
    for (size_t k = 0; k < cands.size(); ++k)
      if (cands[k]->op == "=" && cands[k]->line < use_line) last_plain = static_cast<int>(k);
    bool before = last_plain >= 0;
    if (!before)
      for (size_t k = 0; k < cands.size(); ++k)
        if (cands[k]->op == "=") last_plain = static_cast<int>(k);
    if (last_plain < 0) return Value::unknown_at(want, use_line);
    const PyAssign* a = cands[last_plain];
    Value v = expr(a->value_begin, a->value_end, a->stmt, depth + 1);
    for (size_t k = static_cast<size_t>(last_plain) + 1; k < cands.size() && v.kind != Value::Unknown; ++k) {
      if (cands[k]->op != "+=" || (before && cands[k]->line >= use_line)) continue;
      Value more = expr(cands[k]->value_begin, cands[k]->value_end, cands[k]->stmt, depth + 1);
      if (more.kind != v.kind) return Value::unknown_at(want + " += ...", cands[k]->line);
      if (v.kind == Value::Str) {
        v.str.append(more.str);
        v.partial = v.partial || more.partial;
      } else {
        for (auto& i : more.items) v.items.push_back(std::move(i));
      }
    }
    return v;
  }
};

struct Args {
  std::vector<std::pair<int, int>> positional;
  std::map<std::string, std::pair<int, int>> named;
  bool star_kwargs = false;
};

Args call_args(const PyFacts& f, const PyCall& c) {
  const auto& t = f.t();
  Args a;
  for (auto [x, y] : split_commas(t, c.open + 1, c.close)) {
    if (is_op(t[x], "**")) {
      a.star_kwargs = true;
    } else if (y - x >= 2 && t[x].kind == PyKind::Name && is_op(t[x + 1], "=")) {
      a.named[t[x].text] = {x + 2, y};
    } else {
      a.positional.push_back({x, y});
    }
  }
  return a;
}

// The values `v` stands for: each item of a list, else `v` itself.
std::vector<const Value*> items_of(const Value& v) {
  std::vector<const Value*> items;
  if (v.kind == Value::List)
    for (const auto& i : v.items) items.push_back(&i);
  else
    items.push_back(&v);
  return items;
}

}  // namespace

RecoveredSources recover_sources(const PyFacts& f, const std::string& file, const fs::path& base_dir,
                                 int line_offset) {
  RecoveredSources out;
  out.file = file;
  out.line_offset = line_offset;
  Eval ev(f);
  const int n = static_cast<int>(f.stmts.size());
  auto unresolved = [&](const std::string& what, int line, const std::string& message) {
    Finding x;
    x.rule = "sources_unresolved";
    x.severity = "warn";
    x.file = file;
    x.line = line + line_offset;
    x.code = line_of(f.source, line);
    x.message = what + " " + message;
    out.findings.push_back(std::move(x));
  };
  // Adds the string(s) of `v` as C++ units; says what could not be resolved.
  auto add_units = [&](const Value& v, const std::string& origin, const std::string& what, int line) {
    for (const Value* i : items_of(v)) {
      if (i->kind == Value::Str) {
        CppUnit u;
        u.origin = origin;
        u.file = file;
        u.text = i->str;
        u.line = i->str.file_line(1);
        u.line_offset = line_offset;
        out.units.push_back(std::move(u));
        if (i->partial)
          unresolved(what, i->unknown_line ? i->unknown_line : line,
                     fmt::format("is partly built at runtime ({}); the rest was analysed", i->unknown));
      } else {
        unresolved(what, i->unknown_line ? i->unknown_line : line,
                   fmt::format("is built at runtime ({}): the C++/CUDA rules could not read it",
                               i->unknown.empty() ? "an expression" : i->unknown));
      }
    }
  };
  auto strings_of = [&](const Value& v) {
    std::vector<std::string> s;
    if (v.kind == Value::Str) s.push_back(v.str.text);
    for (const auto& i : v.items)
      if (i.kind == Value::Str) s.push_back(i.str.text);
    return s;
  };

  for (int s = 0; s < n; ++s) {
    const PyStmt& st = f.stmts[s];
    if (f.dead[s] || st.kw == "@" || st.kw == "def" || st.kw == "class") continue;
    for (const PyCall& c : calls_in(f, st.begin, st.end)) {
      if (!f.is_loader(c.canonical) || (c.path.size() == 1 && f.factories.count(c.path[0]))) continue;
      std::string kind = c.canonical.back();
      Args a = call_args(f, c);
      auto arg = [&](const std::string& name, size_t pos) -> std::optional<std::pair<int, int>> {
        if (a.named.count(name)) return a.named[name];
        if (pos < a.positional.size()) return a.positional[pos];
        return std::nullopt;
      };
      auto source_arg = [&](const std::string& name, size_t pos, bool required) {
        auto r = arg(name, pos);
        if (!r) {
          if (required || a.star_kwargs)
            unresolved(fmt::format("{} of the {} call", name, kind), c.line,
                       a.star_kwargs ? "is passed through **kwargs: the C++/CUDA rules could not read it"
                                     : "is missing: the C++/CUDA rules could not read it");
          return;
        }
        Value v = ev.expr(r->first, r->second, s, 0);
        if (v.kind == Value::Str && v.str.text.empty() && !v.partial) return;
        if (v.kind == Value::List && v.items.empty()) return;
        if (r->second - r->first == 1 && is_name(f.t()[r->first], "None")) return;
        add_units(v, name, fmt::format("{} of the {} call at line {}", name, kind, c.line + line_offset), c.line);
      };
      if (kind == "load_inline") {
        bool any = arg("cpp_sources", 1) || arg("cuda_sources", 2);
        source_arg("cpp_sources", 1, !any);
        source_arg("cuda_sources", 2, false);
        if (auto r = arg("functions", 3)) {
          Value v = ev.expr(r->first, r->second, s, 0);
          for (const auto& name : strings_of(v)) out.exported.insert(name);
        }
      } else if (kind == "load") {
        auto r = arg("sources", 1);
        if (!r) {
          unresolved(fmt::format("sources of the load call"), c.line, "is missing: the C++/CUDA rules could not read it");
        } else {
          Value v = ev.expr(r->first, r->second, s, 0);
          for (const Value* i : items_of(v)) {
            if (i->kind != Value::Str || i->partial) {
              unresolved(fmt::format("a source file of the load call at line {}", c.line + line_offset), c.line,
                         fmt::format("is named at runtime ({}): the C++/CUDA rules could not read it",
                                     i->unknown.empty() ? "an expression" : i->unknown));
              continue;
            }
            fs::path written = i->str.text;
            fs::path on_disk = written.is_absolute() ? written : base_dir / written;
            FileText ft = read_file(on_disk);
            if (!ft.ok) {
              unresolved(fmt::format("the source file {} of the load call at line {}", written.string(),
                                     c.line + line_offset),
                         c.line, "cannot be read (" + ft.error + "): its C++/CUDA was not analysed");
              continue;
            }
            CppUnit u;
            u.origin = written.string();
            u.file = written.is_absolute() ? written.string()
                                            : (fs::path(file).parent_path() / written).lexically_normal().string();
            u.text.text = ft.text;
            int lines = 1;
            for (char ch : ft.text) lines += ch == '\n';
            for (int l = 1; l <= lines; ++l) u.text.lines.push_back(l);
            u.line = 1;
            u.file_text = std::move(ft.text);
            out.units.push_back(std::move(u));
          }
        }
      } else if (kind == "RawKernel" || kind == "RawModule" || kind == "_create_jit_fn" ||
                 kind == "_create_multi_output_jit_fn") {
        source_arg("code", 0, true);
      } else if (kind == "ElementwiseKernel" || kind == "ReductionKernel") {
        source_arg("operation", 2, false);
        source_arg("preamble", 100, false);
      } else {
        continue;  // decorators and jit functions are Python, read by the Python rules
      }
      for (const char* flags : {"extra_cflags", "extra_cuda_cflags"}) {
        bool cuda = std::string_view(flags) == "extra_cuda_cflags";
        size_t pos = kind == "load_inline" ? (cuda ? 5 : 4) : (cuda ? 3 : 2);
        if (auto r = arg(flags, pos)) {
          Value v = ev.expr(r->first, r->second, s, 0);
          for (const auto& x : strings_of(v)) out.flags.push_back({x, c.line});
        }
      }
    }
  }
  return out;
}

}  // namespace kbv
