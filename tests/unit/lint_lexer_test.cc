// The tokenizers of the static analysis: Python (strings, f-strings, continuations, indentation)
// and C++/CUDA (raw strings, comments, preprocessor lines, <<< >>> launches).
#include <gtest/gtest.h>

#include "lint/cpp_lexer.h"
#include "lint/python_lexer.h"
#include "lint/python_syntax.h"

namespace kbv {
namespace lint_lexer_test {

std::vector<const PyToken*> kind(const PyLex& l, PyKind k) {
  std::vector<const PyToken*> out;
  for (const auto& t : l.tokens)
    if (t.kind == k) out.push_back(&t);
  return out;
}

const PyString& only_string(const PyLex& l) {
  auto s = kind(l, PyKind::String);
  EXPECT_EQ(s.size(), 1u);
  return l.strings.at(s.at(0)->str);
}

TEST(PythonLexer, EscapesAndEmbeddedQuotes) {
  PyLex l = lex_python(R"(s = "a \"q\" b\\n\t'" + 'it\'s' + b"\x41\101")" "\n");
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto s = kind(l, PyKind::String);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(l.strings[s[0]->str].value.text, "a \"q\" b\\n\t'");
  EXPECT_EQ(l.strings[s[1]->str].value.text, "it's");
  EXPECT_EQ(l.strings[s[2]->str].value.text, "AA");
  EXPECT_TRUE(l.strings[s[2]->str].bytes);
}

TEST(PythonLexer, UnicodeEscapes) {
  PyLex l = lex_python("s = '\\u00e9\\U0001F600\\N{BULLET}'\n");
  EXPECT_EQ(only_string(l).value.text, "\xc3\xa9\xf0\x9f\x98\x80\\N{BULLET}");
}

TEST(PythonLexer, RawStringsKeepBackslashes) {
  PyLex l = lex_python(R"(p = r"\d+\n\"x" )" "\n");
  ASSERT_TRUE(l.error.empty()) << l.error;
  const PyString& s = only_string(l);
  EXPECT_TRUE(s.raw);
  EXPECT_EQ(s.value.text, R"(\d+\n\"x)");
}

TEST(PythonLexer, TripleQuotedKeepsFileLines) {
  PyLex l = lex_python("x = 1\nsrc = \"\"\"first \"q\" ''\n  second\nthird\"\"\"\ny = 2\n");
  ASSERT_TRUE(l.error.empty()) << l.error;
  const PyString& s = only_string(l);
  EXPECT_TRUE(s.triple);
  EXPECT_EQ(s.value.text, "first \"q\" ''\n  second\nthird");
  EXPECT_EQ(s.value.file_line(1), 2);
  EXPECT_EQ(s.value.file_line(2), 3);
  EXPECT_EQ(s.value.file_line(3), 4);
  auto names = kind(l, PyKind::Name);
  ASSERT_EQ(names.back()->text, "y");
  EXPECT_EQ(names.back()->line, 5) << "lines after a multi-line string";
}

TEST(PythonLexer, EscapedNewlinesDoNotShiftFileLines) {
  // "\n" escapes add lines to the value that the file does not have; a backslash-newline removes one.
  PyLex l = lex_python("s = \"\"\"a\\nb\\\nc\nd\"\"\"\n");
  const PyString& s = only_string(l);
  EXPECT_EQ(s.value.text, "a\nbc\nd");
  EXPECT_EQ(s.value.file_line(1), 1);
  EXPECT_EQ(s.value.file_line(2), 1) << "b comes from the file's first line";
  EXPECT_EQ(s.value.file_line(3), 3);
}

TEST(PythonLexer, FStringFieldsWithNestedBracesAndQuotes) {
  PyLex l = lex_python("w = 8\nf\"{x!r:>{w}} {{lit}} {d['k']} {d[\"k\"]:{'>'}{w}} {{}}\"\n");
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto s = kind(l, PyKind::String);
  ASSERT_EQ(s.size(), 1u);
  const PyString& f = l.strings[s[0]->str];
  ASSERT_TRUE(f.fstring);
  std::vector<std::string> exprs;
  for (const auto& field : f.fields) exprs.push_back(field.expr);
  EXPECT_EQ(exprs, (std::vector<std::string>{"x", "w", "d['k']", "d[\"k\"]", "'>'", "w"}));
  EXPECT_EQ(f.value.text, " {lit}   {}") << "literal parts only, doubled braces unescaped";
  // The field d["k"] was tokenized: a name, brackets and a nested string.
  const auto& toks = f.fields[3].tokens;
  ASSERT_EQ(toks.size(), 4u);
  EXPECT_EQ(toks[0].text, "d");
  EXPECT_EQ(toks[2].kind, PyKind::String);
  EXPECT_EQ(l.strings[toks[2].str].value.text, "k");
}

TEST(PythonLexer, NestedFStringsAndDebugFields) {
  PyLex l = lex_python("s = f'{f\"{a}\" + \"}\"} {b=} {c == d}'\n");
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto s = kind(l, PyKind::String);
  ASSERT_EQ(s.size(), 1u);
  const PyString& f = l.strings[s[0]->str];
  ASSERT_EQ(f.fields.size(), 3u);
  EXPECT_EQ(f.fields[1].expr, "b");
  EXPECT_EQ(f.fields[2].expr, "c == d");
}

TEST(PythonLexer, CommentsHoldNoCode) {
  PyLex l = lex_python("x = 1  # torch.manual_seed(0); gc.get_objects()\n# import inspect\n");
  for (const auto& t : l.tokens) {
    EXPECT_NE(t.text, "manual_seed");
    EXPECT_NE(t.text, "inspect");
  }
  EXPECT_EQ(kind(l, PyKind::Newline).size(), 1u);
}

TEST(PythonLexer, LineContinuationsMakeOneLogicalLine) {
  PyLex l = lex_python("a = 1 + \\\n    2\nb = f(1,\n      2)\nc = [\n  3,\n]\n");
  EXPECT_EQ(kind(l, PyKind::Newline).size(), 3u);
  EXPECT_TRUE(kind(l, PyKind::Indent).empty()) << "continuation lines do not indent";
  auto names = kind(l, PyKind::Name);
  EXPECT_EQ(names.back()->text, "c");
  EXPECT_EQ(names.back()->line, 5);
}

TEST(PythonLexer, IndentationAndStatements) {
  PyFacts f = analyze_python(
      "class A:\n"
      "    def f(self, x):\n"
      "        if x: return 1\n"
      "\n"
      "        # comment at another depth\n"
      "        return 2\n"
      "y = 3; z = 4\n");
  ASSERT_TRUE(f.lex.error.empty());
  ASSERT_EQ(f.classes.size(), 1u);
  ASSERT_EQ(f.funcs.size(), 1u);
  EXPECT_EQ(f.funcs[0].params, (std::vector<std::string>{"self", "x"}));
  EXPECT_EQ(f.funcs[0].cls, 0);
  std::vector<std::string> top;
  for (int s : f.top) top.push_back(f.stmts[s].kw);
  EXPECT_EQ(top, (std::vector<std::string>{"class", "", ""}));
  const PyStmt& def = f.stmts[f.funcs[0].stmt];
  ASSERT_EQ(def.body.size(), 2u);
  EXPECT_EQ(f.stmts[def.body[0]].kw, "if");
  ASSERT_EQ(f.stmts[def.body[0]].body.size(), 1u) << "if x: return 1 has its body on the same line";
  EXPECT_EQ(f.stmts[f.stmts[def.body[0]].body[0]].kw, "return");
  EXPECT_EQ(f.stmts[def.body[1]].line, 6);
}

TEST(PythonLexer, UnterminatedStringIsAnErrorWithItsLine) {
  PyLex l = lex_python("x = 1\ny = 'abc\nz = 2\n");
  EXPECT_FALSE(l.error.empty());
  EXPECT_EQ(l.error_line, 2);
  PyLex t = lex_python("s = \"\"\"never closed\n\n");
  EXPECT_EQ(t.error_line, 1);
}

TEST(PythonSyntax, FStringFieldsAreSplicedIntoTheTokens) {
  PyFacts f = analyze_python("import gc\nmsg = f\"found {len(gc.get_objects())} objects\"\n");
  std::vector<std::string> calls;
  for (const auto& c : calls_in(f, 0, static_cast<int>(f.t().size()))) calls.push_back(join(c.canonical));
  EXPECT_EQ(calls, (std::vector<std::string>{"len", "gc.get_objects"}));
}

TEST(PythonSyntax, ImportsResolveAliases) {
  PyFacts f = analyze_python(
      "import torch.nn.functional as F\nfrom time import perf_counter as pc\nimport numpy as np\n"
      "from torch.utils.cpp_extension import load_inline\n");
  EXPECT_EQ(join(f.canonical({"F", "gelu"})), "torch.nn.functional.gelu");
  EXPECT_EQ(join(f.canonical({"pc"})), "time.perf_counter");
  EXPECT_EQ(join(f.canonical({"np", "random", "seed"})), "numpy.random.seed");
  EXPECT_TRUE(f.is_loader(f.canonical({"load_inline"})));
}

std::vector<std::string> texts(const CppLex& l) {
  std::vector<std::string> out;
  for (const auto& t : l.tokens)
    if (t.kind != CppKind::End) out.push_back(t.text);
  return out;
}

TEST(CppLexer, RawStringsAndPrefixes) {
  CppLex l = lex_cpp("auto a = R\"xy(at::relu(x) )\" \")xy\"; auto b = u8\"s\\\"t\"; char c = '\\''; wchar_t d = L'x';\n");
  int strings = 0, chars = 0;
  for (const auto& t : l.tokens) {
    strings += t.kind == CppKind::String;
    chars += t.kind == CppKind::Char;
    EXPECT_NE(t.text, "relu") << "the raw string's content is one token";
  }
  EXPECT_EQ(strings, 2);
  EXPECT_EQ(chars, 2);
  EXPECT_TRUE(l.error.empty()) << l.error;
}

TEST(CppLexer, CommentsAreDroppedAndLinesCounted) {
  CppLex l = lex_cpp("// at::relu(x)\n/* torch::matmul(a, b)\n   spans lines */ int x; // tail \\\n still a comment\nint y;\n");
  EXPECT_EQ(texts(l), (std::vector<std::string>{"int", "x", ";", "int", "y", ";"}));
  EXPECT_EQ(l.tokens[0].line, 3);
  EXPECT_EQ(l.tokens[3].line, 5) << "a // comment continued by a backslash swallows the next line";
}

TEST(CppLexer, PreprocessorLinesAndMacros) {
  CppLex l = lex_cpp("#include <torch/extension.h>\n#define RELU(x) \\\n  at::relu(x)\n#define N 256\nint n = N;\n");
  ASSERT_EQ(l.tokens[0].kind, CppKind::Directive);
  EXPECT_EQ(l.tokens[0].text, "#include <torch/extension.h>");
  ASSERT_EQ(l.macros.size(), 2u);
  EXPECT_EQ(l.macros[0].name, "RELU");
  EXPECT_TRUE(l.macros[0].function_like);
  std::vector<std::string> body;
  for (const auto& t : l.macros[0].body) body.push_back(t.text);
  EXPECT_EQ(body, (std::vector<std::string>{"at", "::", "relu", "(", "x", ")"}));
  EXPECT_EQ(l.macros[0].body[0].line, 3) << "macro body lines survive the continuation";
  EXPECT_FALSE(l.macros[1].function_like);
  EXPECT_EQ(l.tokens.back().line, 6);
  EXPECT_EQ(l.tokens[l.tokens.size() - 2].line, 5);
}

TEST(CppLexer, CudaLaunchBrackets) {
  CppLex l = lex_cpp("k<<<grid, block, 0, stream>>>(a, b); std::vector<std::vector<int>>> v; x >>= 1;\n");
  auto t = texts(l);
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[1], "<<<");
  EXPECT_EQ(t[9], ">>>");
  // Outside a launch, >>> is >> then > (nested templates).
  EXPECT_NE(std::find(t.begin() + 10, t.end(), ">>"), t.end());
  EXPECT_EQ(std::count(t.begin(), t.end(), ">>>"), 1);
  EXPECT_NE(std::find(t.begin(), t.end(), ">>="), t.end());
}

TEST(CppLexer, NumbersWithSeparatorsAndExponents) {
  CppLex l = lex_cpp("auto n = 1'000'000; float f = 1.5e-3f; auto h = 0x1p+4;\n");
  std::vector<std::string> numbers;
  for (const auto& t : l.tokens)
    if (t.kind == CppKind::Number) numbers.push_back(t.text);
  EXPECT_EQ(numbers, (std::vector<std::string>{"1'000'000", "1.5e-3f", "0x1p+4"}));
}

TEST(CppLexer, UnterminatedLiteralIsNotedAndTokenizingGoesOn) {
  CppLex l = lex_cpp("const char* s = \"abc;\nint x;\n");
  EXPECT_FALSE(l.error.empty());
  EXPECT_EQ(l.error_line, 1);
  auto t = texts(l);
  EXPECT_EQ(t[t.size() - 3], "int");
}

}  // namespace lint_lexer_test
}  // namespace kbv
