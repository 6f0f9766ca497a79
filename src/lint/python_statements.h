// The first step of analyze_python (lint/python_syntax.h), shared by its two files: the module
// lexed, f-strings' fields spliced in as tokens, and its statements nested by indentation; no
// other field of PyFacts filled yet. Internal to src/lint/.
#pragma once
#include <string_view>

#include "lint/python_syntax.h"

namespace kbv {

PyFacts python_statements(std::string_view source);

}  // namespace kbv
