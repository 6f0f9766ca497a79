// A tokenizer for Python source (3.8-3.13): names, numbers, operators, logical newlines,
// indentation, and string literals with their values recovered (escapes, raw strings,
// triple quotes, implicit line joining, backslash continuations, f-strings with nested fields
// and nested quotes). Comments are dropped. It never throws; an unterminated string is an error
// with its line.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lint/finding.h"

namespace kbv {

enum class PyKind { Name, Number, String, Op, Newline, Indent, Dedent, End };

struct PyToken {
  PyKind kind = PyKind::End;
  std::string text;  // source text (for a string: the whole literal, prefix and quotes included)
  int line = 0;      // 1-based line where the token starts
  int end_line = 0;  // line where it ends (differs for triple-quoted strings)
  int str = -1;      // for String: index into PyLex::strings
  bool in_field = false;  // spliced in from an f-string field (see analyze_python)
};

// One field `{expr!r:spec}` of an f-string.
struct PyField {
  std::vector<PyToken> tokens;  // the expression's tokens (nested strings index PyLex::strings too)
  std::string expr;             // its source text
  int line = 0;
};

// A piece of an f-string: literal text, or a replacement field.
struct PyPiece {
  bool is_field = false;
  SourceText literal;
  int field = -1;  // index into PyString::fields
};

struct PyString {
  std::string prefix;  // lower-case prefix letters ("", "r", "f", "rb", ...)
  bool raw = false, bytes = false, fstring = false, triple = false;
  SourceText value;             // decoded value; for f-strings the literal parts only
  std::vector<PyPiece> pieces;  // f-strings: literal and field pieces in order
  std::vector<PyField> fields;  // f-strings: every field, those nested in format specs included
};

struct PyLex {
  std::vector<PyToken> tokens;  // ends with End
  std::vector<PyString> strings;
  std::string error;            // empty when the whole text was tokenized
  int error_line = 0;
};

PyLex lex_python(std::string_view source);

}  // namespace kbv
