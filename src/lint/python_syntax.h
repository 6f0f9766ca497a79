// The structure of a Python module, from its tokens: statements nested by indentation, imports,
// classes, functions, assignments and calls, and which names lead to compiled kernels.
// Deliberately not a full parser: statement boundaries and bracket structure are exact, and
// expressions are read as token ranges.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lint/python_lexer.h"

namespace kbv {

struct PyStmt {
  int begin = 0, end = 0;  // tokens of a simple statement, or of a compound header before its ':'
  int line = 0;
  std::string kw;          // class def if elif else try except finally with for while match case,
                           // '@' (decorator), or a simple statement's keyword (return import ...), or ""
  bool compound = false;
  int parent = -1;
  std::vector<int> body;
  std::vector<int> decorators;
};

using Path = std::vector<std::string>;  // a dotted name: {"torch", "nn", "functional", "gelu"}
std::string join(const Path& p);

struct PyCall {
  Path path;          // callee as written; "?" first when the callee hangs off an expression
  Path canonical;     // first component resolved through the imports ("F.relu" -> torch.nn.functional.relu)
  int name = 0;       // first token of the callee
  int open = 0;       // '('
  int close = 0;      // matching ')'
  bool subscripted = false;  // name[...](...) (a Triton launch)
  int line = 0;
};

struct PyRef {        // a maximal dotted name: Name(.Name)*
  Path path, canonical;
  int begin = 0, end = 0;  // tokens [begin, end)
  bool called = false;     // followed by '('
  int line = 0;
};

struct PyAssign {
  int stmt = 0;
  std::vector<std::pair<int, int>> targets;  // token ranges of each target
  int value_begin = 0, value_end = 0;
  std::string op;                            // "=" or "+=" ...
  int line = 0;
};

struct PyFunc {
  std::string name;
  int stmt = 0;
  int cls = -1;  // index in PyFacts::classes of the class it is a method of
  std::vector<std::string> params;
  std::vector<Path> decorators;  // canonical
  bool kernel = false;           // a @triton.jit-like kernel
  bool calls_kernel = false;     // reaches a compiled kernel
};

struct PyClass {
  std::string name;
  int stmt = 0;
  std::vector<Path> bases;  // canonical
  std::map<std::string, int> methods;  // name -> index in PyFacts::funcs
  bool kernel_module = false;          // its forward/__call__ reaches a compiled kernel
};

struct PyFacts {
  std::string_view source;
  // The module's tokens, with every f-string field's tokens spliced in right after its string,
  // between '(' and ')' tokens marked in_field, so that the rules see code hidden in f-strings.
  PyLex lex;
  std::vector<PyStmt> stmts;
  std::vector<int> top;
  std::vector<int> func_of, class_of;  // per statement: innermost enclosing def / class (-1)
  std::vector<bool> dead;              // per statement: under `if __name__ == "__main__":`
  std::map<std::string, Path> imports; // local name -> module path
  std::vector<PyFunc> funcs;
  std::vector<PyClass> classes;
  std::vector<PyAssign> assigns;
  std::set<std::string> handles;       // keys (see handle_key) of names that lead to compiled code
  std::set<std::string> factories;     // functions that return a compiled module (they call a loader)
  bool kernel_defined = false;         // a loader call or a kernel decorator exists

  const std::vector<PyToken>& t() const { return lex.tokens; }
  Path canonical(const Path& p) const;
  // The key of a path in the handle set: "name", or "@Class.attr" for self.attr in a method.
  std::string handle_key(const Path& p, int stmt) const;
  bool is_handle(const Path& p, int stmt) const;  // p or one of its prefixes is a handle
  bool is_kernel_call(const PyCall& c, int stmt) const;
  bool is_loader(const Path& canonical) const;   // load_inline & co
  int class_index(const std::string& name) const;
  int find_method(int cls, const std::string& name) const;  // follows bases defined in the file
};

PyFacts analyze_python(std::string_view source);

// Token helpers over [begin, end).
int match_bracket(const std::vector<PyToken>& t, int open);
std::vector<PyCall> calls_in(const PyFacts& f, int begin, int end);
std::vector<PyRef> refs_in(const PyFacts& f, int begin, int end);
Path dotted_at(const std::vector<PyToken>& t, int i, int end, int* next);  // Name(.Name)* at i
std::vector<std::pair<int, int>> split_commas(const std::vector<PyToken>& t, int begin, int end);
// Statements in the subtree of `stmt` (itself included), in source order.
std::vector<int> subtree(const PyFacts& f, int stmt);
bool is_op(const PyToken& tok, std::string_view op);
bool is_name(const PyToken& tok, std::string_view name);

}  // namespace kbv
