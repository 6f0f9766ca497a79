#include "lint/cpp_lexer.h"

#include <algorithm>
#include <cctype>

namespace kbv {
namespace {

bool ident_start(unsigned char c) { return std::isalpha(c) || c == '_' || c == '$' || c >= 0x80; }
bool ident_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

class CppLexer {
 public:
  CppLexer(std::string_view s, int first_line, bool directives) : s_(s), line_(first_line), directives_(directives) {}

  CppLex run() {
    bool line_start = true;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        line_start = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
        continue;
      }
      if (c == '\\' && newline_at(i_ + 1)) {
        skip_continuation();
        continue;
      }
      if (c == '/' && peek(1) == '/') {
        skip_line_comment();
        continue;
      }
      if (c == '/' && peek(1) == '*') {
        skip_block_comment();
        continue;
      }
      if (c == '#' && line_start && directives_) {
        lex_directive();
        line_start = true;
        continue;
      }
      line_start = false;
      lex_token();
    }
    CppToken end;
    end.kind = CppKind::End;
    end.line = line_;
    out_.tokens.push_back(end);
    return std::move(out_);
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
  int line_;
  bool directives_;
  int launches_open_ = 0;  // '<<<' seen without its '>>>'
  CppLex out_;

  char peek(size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  bool newline_at(size_t j) const {
    return j < s_.size() && (s_[j] == '\n' || (s_[j] == '\r' && j + 1 < s_.size() && s_[j + 1] == '\n'));
  }
  void skip_continuation() {
    ++i_;
    if (s_[i_] == '\r') ++i_;
    ++i_;
    ++line_;
  }
  void skip_line_comment() {  // a // comment continues over backslash-newlines
    while (i_ < s_.size() && s_[i_] != '\n') {
      if (s_[i_] == '\\' && newline_at(i_ + 1)) {
        skip_continuation();
        continue;
      }
      ++i_;
    }
  }
  void skip_block_comment() {
    i_ += 2;
    while (i_ < s_.size() && !(s_[i_] == '*' && peek(1) == '/')) {
      if (s_[i_] == '\n') ++line_;
      ++i_;
    }
    i_ = i_ < s_.size() ? i_ + 2 : i_;
  }
  void note_error(const std::string& what, int line) {
    if (out_.error.empty()) {
      out_.error = what;
      out_.error_line = line;
    }
  }
  void push(CppKind k, std::string text, int line) {
    CppToken t;
    t.kind = k;
    t.text = std::move(text);
    t.line = line;
    out_.tokens.push_back(std::move(t));
  }

  // A preprocessor line: one Directive token; a #define also becomes a macro.
  void lex_directive() {
    const int line = line_;
    std::string text;  // continuations joined, comments replaced by a space
    while (i_ < s_.size() && s_[i_] != '\n') {
      if (s_[i_] == '\\' && newline_at(i_ + 1)) {
        skip_continuation();
        text += ' ';
        text += '\n';  // keeps line numbers right when the text is tokenized again
        continue;
      }
      if (s_[i_] == '/' && peek(1) == '/') {
        skip_line_comment();
        break;
      }
      if (s_[i_] == '/' && peek(1) == '*') {
        int before = line_;
        skip_block_comment();
        text += ' ';
        for (int k = before; k < line_; ++k) text += '\n';
        continue;
      }
      text += s_[i_++];
    }
    std::string flat;
    for (char c : text)
      if (c != '\n') flat += c;
    push(CppKind::Directive, flat, line);
    // Tokens after '#': the directive's name, then its body.
    CppLex inner = CppLexer(std::string_view(text).substr(1), line, false).run();
    inner.tokens.pop_back();  // End
    if (inner.tokens.size() >= 2 && inner.tokens[0].text == "define" && inner.tokens[1].kind == CppKind::Ident) {
      CppMacro m;
      m.name = inner.tokens[1].text;
      m.line = line;
      size_t after_name = text.find(m.name, text.find("define") + 6) + m.name.size();
      size_t body = 2;
      if (after_name < text.size() && text[after_name] == '(') {
        m.function_like = true;
        while (body < inner.tokens.size() && inner.tokens[body].text != ")") ++body;
        ++body;
      }
      for (size_t k = body; k < inner.tokens.size(); ++k) m.body.push_back(inner.tokens[k]);
      out_.macros.push_back(std::move(m));
    }
    if (!inner.error.empty()) note_error(inner.error, inner.error_line);
  }

  void lex_token() {
    const int line = line_;
    unsigned char c = static_cast<unsigned char>(s_[i_]);
    if (ident_start(c)) {
      size_t j = i_;
      while (j < s_.size() && ident_char(static_cast<unsigned char>(s_[j]))) ++j;
      std::string word(s_.substr(i_, j - i_));
      char q = j < s_.size() ? s_[j] : '\0';
      bool prefix_ok = word == "L" || word == "u" || word == "U" || word == "u8";
      bool raw_ok = word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
      if (q == '"' && raw_ok) {
        lex_raw_string(i_, j);
        return;
      }
      if ((q == '"' || q == '\'') && prefix_ok) {
        lex_quoted(i_, j);
        return;
      }
      i_ = j;
      push(CppKind::Ident, word, line);
      return;
    }
    if (std::isdigit(c) || (c == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
      size_t j = i_ + 1;
      while (j < s_.size()) {
        unsigned char d = static_cast<unsigned char>(s_[j]);
        if (std::isalnum(d) || d == '_' || d == '.') {
          ++j;
        } else if (d == '\'' && j + 1 < s_.size() && std::isalnum(static_cast<unsigned char>(s_[j + 1]))) {
          j += 2;  // digit separator
        } else if ((d == '+' || d == '-') && (s_[j - 1] == 'e' || s_[j - 1] == 'E' || s_[j - 1] == 'p' || s_[j - 1] == 'P')) {
          ++j;
        } else {
          break;
        }
      }
      push(CppKind::Number, std::string(s_.substr(i_, j - i_)), line);
      i_ = j;
      return;
    }
    if (c == '"' || c == '\'') {
      lex_quoted(i_, i_);
      return;
    }
    if (s_.substr(i_, 3) == "<<<") {
      ++launches_open_;
      push(CppKind::Punct, "<<<", line);
      i_ += 3;
      return;
    }
    if (s_.substr(i_, 3) == ">>>" && launches_open_ > 0) {
      --launches_open_;
      push(CppKind::Punct, ">>>", line);
      i_ += 3;
      return;
    }
    static const char* puncts[] = {"<<=", ">>=", "...", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=",
                                   ">=",  "==",  "!=",  "&&",  "||",  "+=", "-=", "*=", "/=", "%=", "&=", "|=",
                                   "^=",  ".*",  "##"};
    for (const char* p : puncts) {
      std::string_view o(p);
      if (s_.substr(i_, o.size()) == o) {
        push(CppKind::Punct, std::string(o), line);
        i_ += o.size();
        return;
      }
    }
    push(CppKind::Punct, std::string(1, static_cast<char>(c)), line);
    ++i_;
  }

  // "..." or '...' with an optional prefix starting at `start`; the quote is at `q`.
  void lex_quoted(size_t start, size_t q) {
    const int line = line_;
    char quote = s_[q];
    size_t j = q + 1;
    for (;;) {
      if (j >= s_.size() || s_[j] == '\n') {
        note_error(quote == '"' ? "unterminated string literal" : "unterminated character literal", line);
        break;
      }
      if (s_[j] == '\\') {
        if (newline_at(j + 1)) ++line_;
        j += 2;
        continue;
      }
      if (s_[j] == quote) {
        ++j;
        break;
      }
      ++j;
    }
    i_ = std::min(j, s_.size());
    push(quote == '"' ? CppKind::String : CppKind::Char, std::string(s_.substr(start, i_ - start)), line);
  }

  // R"delim( ... )delim" with its prefix at `start`; the quote is at `q`.
  void lex_raw_string(size_t start, size_t q) {
    const int line = line_;
    size_t open = s_.find('(', q + 1);
    if (open == std::string_view::npos || open - q - 1 > 16) {
      note_error("malformed raw string literal", line);
      lex_quoted(start, q);
      return;
    }
    std::string close = ")" + std::string(s_.substr(q + 1, open - q - 1)) + "\"";
    size_t end = s_.find(close, open + 1);
    if (end == std::string_view::npos) {
      note_error("unterminated raw string literal", line);
      end = s_.size();
    } else {
      end += close.size();
    }
    for (size_t k = i_; k < end; ++k)
      if (s_[k] == '\n') ++line_;
    i_ = end;
    push(CppKind::String, std::string(s_.substr(start, end - start)), line);
  }
};

}  // namespace

CppLex lex_cpp(std::string_view source) { return CppLexer(source, 1, true).run(); }

}  // namespace kbv
