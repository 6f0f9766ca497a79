#include "lint/python_lexer.h"

#include <cctype>

namespace kbv {
namespace {

bool name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool name_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

bool is_string_prefix(std::string_view p) {
  if (p.empty() || p.size() > 2) return false;
  std::string l;
  for (char c : p) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ok : {"r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt"})
    if (l == ok) return true;
  return false;
}

void put_utf8(SourceText& out, unsigned long cp, int line) {
  if (cp < 0x80) {
    out.put(static_cast<char>(cp), line);
  } else if (cp < 0x800) {
    out.put(static_cast<char>(0xC0 | (cp >> 6)), line);
    out.put(static_cast<char>(0x80 | (cp & 0x3F)), line);
  } else if (cp < 0x10000) {
    out.put(static_cast<char>(0xE0 | (cp >> 12)), line);
    out.put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), line);
    out.put(static_cast<char>(0x80 | (cp & 0x3F)), line);
  } else {
    out.put(static_cast<char>(0xF0 | (cp >> 18)), line);
    out.put(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)), line);
    out.put(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), line);
    out.put(static_cast<char>(0x80 | (cp & 0x3F)), line);
  }
}

class PythonLexer {
 public:
  explicit PythonLexer(std::string_view s) : s_(s) {}

  PyLex run() {
    std::vector<int> indents = {0};
    bool line_start = true;
    while (i_ < s_.size() && out_.error.empty()) {
      if (line_start && depth_ == 0) {
        line_start = false;
        int col = 0;
        size_t j = i_;
        for (; j < s_.size(); ++j) {
          if (s_[j] == ' ') ++col;
          else if (s_[j] == '\t') col = (col / 8 + 1) * 8;
          else if (s_[j] == '\f') col = 0;
          else break;
        }
        // Blank and comment-only lines do not count for indentation.
        if (j >= s_.size() || s_[j] == '\n' || s_[j] == '\r' || s_[j] == '#' ||
            (s_[j] == '\\' && j + 1 < s_.size() && s_[j + 1] == '\n')) {
          i_ = j;
          skip_to_line_end();
          if (i_ < s_.size()) {
            if (s_[i_] == '\\') ++i_;  // a lone continuation on an empty line
            ++i_;
            ++line_;
          }
          line_start = true;
          continue;
        }
        i_ = j;
        if (col > indents.back()) {
          indents.push_back(col);
          emit(PyKind::Indent, "");
        } else {
          while (col < indents.back()) {
            indents.pop_back();
            emit(PyKind::Dedent, "");
          }
        }
      }
      char c = s_[i_];
      if (c == '\n') {
        if (depth_ == 0) {
          if (!out_.tokens.empty() && out_.tokens.back().kind != PyKind::Newline &&
              out_.tokens.back().kind != PyKind::Indent && out_.tokens.back().kind != PyKind::Dedent)
            emit(PyKind::Newline, "");
          line_start = true;
        }
        ++i_;
        ++line_;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#') {
        skip_to_line_end();
        continue;
      }
      if (c == '\\' && next_is_newline(i_ + 1)) {
        skip_continuation();
        continue;
      }
      lex_one(out_.tokens);
    }
    if (!out_.tokens.empty() && out_.tokens.back().kind != PyKind::Newline &&
        out_.tokens.back().kind != PyKind::Dedent)
      emit(PyKind::Newline, "");
    while (indents.size() > 1) {
      indents.pop_back();
      emit(PyKind::Dedent, "");
    }
    emit(PyKind::End, "");
    return std::move(out_);
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;  // open brackets at the top level
  PyLex out_;

  void emit(PyKind k, std::string text) {
    PyToken t;
    t.kind = k;
    t.text = std::move(text);
    t.line = t.end_line = line_;
    out_.tokens.push_back(std::move(t));
  }

  void fail(const std::string& what, int line) {
    if (out_.error.empty()) {
      out_.error = what;
      out_.error_line = line;
    }
    i_ = s_.size();
  }

  bool next_is_newline(size_t j) const {
    return j < s_.size() && (s_[j] == '\n' || (s_[j] == '\r' && j + 1 < s_.size() && s_[j + 1] == '\n'));
  }

  void skip_continuation() {  // at a backslash followed by a newline
    ++i_;
    if (s_[i_] == '\r') ++i_;
    ++i_;
    ++line_;
  }

  void skip_to_line_end() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }

  // Whitespace inside an f-string field: newlines, continuations and comments included.
  void skip_space_in_field() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
        ++i_;
      } else if (c == '\n') {
        ++i_;
        ++line_;
      } else if (c == '\\' && next_is_newline(i_ + 1)) {
        skip_continuation();
      } else if (c == '#') {
        skip_to_line_end();
      } else {
        break;
      }
    }
  }

  // One name, number, string or operator at i_, appended to `dest`. Brackets update the
  // top-level depth, or `field_depth` inside an f-string field.
  void lex_one(std::vector<PyToken>& dest, int* field_depth = nullptr) {
    unsigned char c = static_cast<unsigned char>(s_[i_]);
    PyToken t;
    t.line = t.end_line = line_;
    if (name_start(c)) {
      size_t j = i_;
      while (j < s_.size() && name_char(static_cast<unsigned char>(s_[j]))) ++j;
      std::string_view word = s_.substr(i_, j - i_);
      if (j < s_.size() && (s_[j] == '"' || s_[j] == '\'') && is_string_prefix(word)) {
        lex_string(i_, std::string(word), j, dest);
        return;
      }
      t.kind = PyKind::Name;
      t.text = std::string(word);
      i_ = j;
      dest.push_back(std::move(t));
      return;
    }
    if (std::isdigit(c) || (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
      size_t j = i_;
      bool hex = c == '0' && j + 1 < s_.size() && (s_[j + 1] == 'x' || s_[j + 1] == 'X');
      while (j < s_.size()) {
        unsigned char d = static_cast<unsigned char>(s_[j]);
        if (std::isalnum(d) || d == '_' || d == '.') {
          ++j;
        } else if ((d == '+' || d == '-') && !hex && (s_[j - 1] == 'e' || s_[j - 1] == 'E')) {
          ++j;
        } else {
          break;
        }
      }
      t.kind = PyKind::Number;
      t.text = std::string(s_.substr(i_, j - i_));
      i_ = j;
      dest.push_back(std::move(t));
      return;
    }
    if (c == '"' || c == '\'') {
      lex_string(i_, "", i_, dest);
      return;
    }
    static const char* ops[] = {"**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=",
                                ">=",  "==",  "!=",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@="};
    for (const char* op : ops) {
      std::string_view o(op);
      if (s_.substr(i_, o.size()) == o) {
        t.kind = PyKind::Op;
        t.text = std::string(o);
        i_ += o.size();
        dest.push_back(std::move(t));
        return;
      }
    }
    t.kind = PyKind::Op;
    t.text = std::string(1, static_cast<char>(c));
    int& d = field_depth ? *field_depth : depth_;
    if (c == '(' || c == '[' || c == '{') ++d;
    if ((c == ')' || c == ']' || c == '}') && d > 0) --d;
    ++i_;
    dest.push_back(std::move(t));
  }

  // A string literal whose prefix starts at `start` and whose quote is at `q`.
  void lex_string(size_t start, std::string prefix, size_t q, std::vector<PyToken>& dest) {
    PyString str;
    for (char& ch : prefix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    str.prefix = prefix;
    str.raw = prefix.find('r') != std::string::npos;
    str.bytes = prefix.find('b') != std::string::npos;
    str.fstring = prefix.find('f') != std::string::npos || prefix.find('t') != std::string::npos;
    char quote = s_[q];
    str.triple = q + 2 < s_.size() && s_[q + 1] == quote && s_[q + 2] == quote;
    const int first_line = line_;
    i_ = q + (str.triple ? 3 : 1);
    SourceText literal;  // the current literal piece (f-strings) or the whole value
    auto flush_literal = [&]() {
      if (!str.fstring) return;
      if (!literal.text.empty()) {
        PyPiece p;
        p.literal = literal;
        str.pieces.push_back(std::move(p));
      }
      str.value.append(literal);
      literal = SourceText();
    };
    for (;;) {
      if (i_ >= s_.size()) {
        fail("unterminated string literal starting here", first_line);
        return;
      }
      char c = s_[i_];
      if (c == quote) {
        if (!str.triple) {
          ++i_;
          break;
        }
        if (i_ + 2 < s_.size() && s_[i_ + 1] == quote && s_[i_ + 2] == quote) {
          i_ += 3;
          break;
        }
      }
      if (c == '\n') {
        if (!str.triple) {
          fail("unterminated string literal starting here", first_line);
          return;
        }
        literal.put('\n', line_);
        ++line_;
        ++i_;
        continue;
      }
      if (c == '\\') {
        lex_escape(str, literal);
        continue;
      }
      if (str.fstring && c == '{') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '{') {
          literal.put('{', line_);
          i_ += 2;
          continue;
        }
        flush_literal();
        lex_field(str, true);
        if (!out_.error.empty()) return;
        continue;
      }
      if (str.fstring && c == '}') {
        literal.put('}', line_);
        i_ += (i_ + 1 < s_.size() && s_[i_ + 1] == '}') ? 2 : 1;
        continue;
      }
      literal.put(c, line_);
      ++i_;
    }
    if (str.fstring)
      flush_literal();
    else
      str.value = literal;
    PyToken t;
    t.kind = PyKind::String;
    t.text = std::string(s_.substr(start, i_ - start));
    t.line = first_line;
    t.end_line = line_;
    t.str = static_cast<int>(out_.strings.size());
    out_.strings.push_back(std::move(str));
    dest.push_back(std::move(t));
  }

  // At a backslash inside a string literal.
  void lex_escape(PyString& str, SourceText& out) {
    const int line = line_;
    if (next_is_newline(i_ + 1)) {  // continuation: both characters vanish (raw strings keep them)
      if (str.raw) {
        out.put('\\', line);
        out.put('\n', line);
      }
      skip_continuation();
      return;
    }
    if (i_ + 1 >= s_.size()) {
      out.put('\\', line);
      ++i_;
      return;
    }
    char e = s_[i_ + 1];
    if (str.raw) {  // the backslash stays; it only protects the next character
      out.put('\\', line);
      out.put(e, line);
      i_ += 2;
      return;
    }
    auto hex_value = [&](size_t from, size_t n, unsigned long& v) {
      if (from + n > s_.size()) return false;
      v = 0;
      for (size_t k = 0; k < n; ++k) {
        char h = s_[from + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        v = v * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      return true;
    };
    switch (e) {
      case 'n': out.put('\n', line); i_ += 2; return;
      case 't': out.put('\t', line); i_ += 2; return;
      case 'r': out.put('\r', line); i_ += 2; return;
      case 'a': out.put('\a', line); i_ += 2; return;
      case 'b': out.put('\b', line); i_ += 2; return;
      case 'f': out.put('\f', line); i_ += 2; return;
      case 'v': out.put('\v', line); i_ += 2; return;
      case '\\': case '\'': case '"': out.put(e, line); i_ += 2; return;
      case 'x': {
        unsigned long v;
        if (hex_value(i_ + 2, 2, v)) {
          if (str.bytes) out.put(static_cast<char>(v), line);
          else put_utf8(out, v, line);
          i_ += 4;
          return;
        }
        break;
      }
      case 'u': case 'U': {
        size_t n = e == 'u' ? 4 : 8;
        unsigned long v;
        if (!str.bytes && hex_value(i_ + 2, n, v)) {
          put_utf8(out, v, line);
          i_ += 2 + n;
          return;
        }
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          unsigned long v = 0;
          size_t k = i_ + 1;
          for (int n = 0; n < 3 && k < s_.size() && s_[k] >= '0' && s_[k] <= '7'; ++n, ++k) v = v * 8 + static_cast<unsigned long>(s_[k] - '0');
          if (str.bytes) out.put(static_cast<char>(v & 0xFF), line);
          else put_utf8(out, v, line);
          i_ = k;
          return;
        }
    }
    // Unknown escape (\N{...} included): kept as written.
    out.put('\\', line);
    out.put(e, line);
    i_ += 2;
  }

  // At '{' of an f-string replacement field; reads through the matching '}'.
  void lex_field(PyString& str, bool top_level_piece) {
    const int first_line = line_;
    const size_t open = i_;
    ++i_;
    PyField field;
    field.line = first_line;
    int depth = 0;
    int index = static_cast<int>(str.fields.size());
    str.fields.emplace_back();
    if (top_level_piece) {
      PyPiece p;
      p.is_field = true;
      p.field = index;
      str.pieces.push_back(std::move(p));
    }
    size_t expr_end = std::string_view::npos;
    for (;;) {
      skip_space_in_field();
      if (i_ >= s_.size()) {
        fail("unterminated f-string field starting here", first_line);
        return;
      }
      char c = s_[i_];
      if (depth == 0 && c == '}') {
        if (expr_end == std::string_view::npos) expr_end = i_;
        ++i_;
        break;
      }
      if (depth == 0 && c == '!' && !(i_ + 1 < s_.size() && s_[i_ + 1] == '=')) {
        if (expr_end == std::string_view::npos) expr_end = i_;
        ++i_;
        while (i_ < s_.size() && name_char(static_cast<unsigned char>(s_[i_]))) ++i_;
        continue;
      }
      if (depth == 0 && c == ':') {
        if (expr_end == std::string_view::npos) expr_end = i_;
        ++i_;
        // The format spec: literal text with nested fields, up to the closing '}'.
        for (;;) {
          if (i_ >= s_.size()) {
            fail("unterminated f-string field starting here", first_line);
            return;
          }
          char d = s_[i_];
          if (d == '}') break;
          if (d == '\n') ++line_;
          if (d == '{') {
            lex_field(str, false);
            if (!out_.error.empty()) return;
            continue;
          }
          ++i_;
        }
        ++i_;
        break;
      }
      if (depth == 0 && c == '=' && !(i_ + 1 < s_.size() && s_[i_ + 1] == '=')) {  // {x=} debug form
        if (expr_end == std::string_view::npos) expr_end = i_;
        ++i_;
        continue;
      }
      lex_one(field.tokens, &depth);
      if (!out_.error.empty()) return;
    }
    field.expr = std::string(s_.substr(open + 1, expr_end - open - 1));
    str.fields[index] = std::move(field);
  }
};

}  // namespace

PyLex lex_python(std::string_view source) { return PythonLexer(source).run(); }

}  // namespace kbv
