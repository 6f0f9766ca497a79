// A tokenizer for C++ and CUDA source: identifiers, numbers, string and character literals
// (prefixed and raw), punctuators (CUDA's <<< >>> launch brackets included), comments dropped,
// backslash continuations joined, preprocessor lines kept as one token each with the macros
// they define. It never throws; it tokenizes whatever it is given.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kbv {

enum class CppKind { Ident, Number, String, Char, Punct, Directive, End };

struct CppToken {
  CppKind kind = CppKind::End;
  std::string text;  // source text; a directive's text is its whole logical line
  int line = 0;      // 1-based line in the text that was tokenized
};

struct CppMacro {
  std::string name;
  bool function_like = false;
  std::vector<CppToken> body;
  int line = 0;
};

struct CppLex {
  std::vector<CppToken> tokens;  // ends with End
  std::vector<CppMacro> macros;  // every #define, in order
  std::string error;             // the first malformed literal, if any (tokenizing went on)
  int error_line = 0;
};

CppLex lex_cpp(std::string_view source);

}  // namespace kbv
