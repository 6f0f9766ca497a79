#include <gtest/gtest.h>

#include <string>

#include "compile/diagnostics.h"

namespace kbv {
namespace diagnostics_test {

// What torch.utils.cpp_extension.load_inline prints when the C++ part does not compile.
const char* kLoadInlineGccLog = R"(Using /root/.cache/torch_extensions/py311_cpu as PyTorch extensions root...
Creating extension directory /root/.cache/torch_extensions/py311_cpu/elementwise_add...
Emitting ninja build file /root/.cache/torch_extensions/py311_cpu/elementwise_add/build.ninja...
Building extension module elementwise_add...
Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)
[1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=elementwise_add -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\"_gcc\" -DPYBIND11_STDLIB=\"_libstdcpp\" -DPYBIND11_BUILD_ABI=\"_cxxabi1011\" -isystem /usr/lib/python3/dist-packages/torch/include -isystem /usr/include/python3.11 -D_GLIBCXX_USE_CXX11_ABI=1 -fPIC -std=c++17 -O3 -c /root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp -o main.o
FAILED: main.o
c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=elementwise_add -fPIC -std=c++17 -O3 -c /root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp -o main.o
/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp: In function 'at::Tensor elementwise_add(at::Tensor, at::Tensor)':
/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:5:10: error: 'foo' was not declared in this scope
    5 |   return foo(a, b);
      |          ^~~
In file included from /usr/lib/python3/dist-packages/torch/include/torch/extension.h:5,
                 from /root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:1:
/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:9:3: warning: unused variable 'x' [-Wunused-variable]
    9 |   int x;
      |   ^
/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:12:1: error: expected ';' before '}' token
   12 | }
      | ^
/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:5:10: error: 'foo' was not declared in this scope
ninja: build stopped: subcommand failed.
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/cpp_extension.py", line 2104, in _run_ninja_build
    subprocess.run(
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.
)";

TEST(Diagnostics, LoadInlineGccLog) {
  auto d = parse_compiler_errors(kLoadInlineGccLog);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, "/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp");
  EXPECT_EQ(d[0].line, 5);
  EXPECT_EQ(d[0].column, 10);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_EQ(d[0].message, "'foo' was not declared in this scope");
  EXPECT_EQ(d[1].line, 12);
  EXPECT_EQ(d[1].column, 1);
  EXPECT_EQ(d[1].message, "expected ';' before '}' token");
  EXPECT_EQ(format_diagnostics(d),
            "/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:5: error: 'foo' "
            "was not declared in this scope\n"
            "/root/.cache/torch_extensions/py311_cpu/elementwise_add/main.cpp:12: error: "
            "expected ';' before '}' token");
}

TEST(Diagnostics, MaxErrorsKeepsTheFirst) {
  std::string log;
  for (int i = 1; i <= 8; ++i)
    log += "main.cpp:" + std::to_string(i) + ":1: error: problem " + std::to_string(i) + "\n";
  auto d = parse_compiler_errors(log, 3);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].message, "problem 1");
  EXPECT_EQ(d[2].message, "problem 3");
  EXPECT_EQ(parse_compiler_errors(log).size(), 5u);
}

TEST(Diagnostics, FatalErrorAndNoColumn) {
  auto d = parse_compiler_errors(
      "main.cpp:2:10: fatal error: cuda_fp8.h: No such file or directory\n"
      "    2 | #include <cuda_fp8.h>\n"
      "compilation terminated.\n"
      "helper.c:7: error: old-style message\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity, "fatal error");
  EXPECT_EQ(d[0].message, "cuda_fp8.h: No such file or directory");
  EXPECT_EQ(d[1].file, "helper.c");
  EXPECT_EQ(d[1].line, 7);
  EXPECT_EQ(d[1].column, 0);
  EXPECT_EQ(d[1].message, "old-style message");
}

TEST(Diagnostics, NvccLog) {
  const char* log = R"([1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output cuda.cuda.o.d -DTORCH_EXTENSION_NAME=fused -gencode=arch=compute_90,code=sm_90 --compiler-options '-fPIC' -std=c++17 -c /root/.cache/torch_extensions/py311_cu126/fused/cuda.cu -o cuda.cuda.o
FAILED: cuda.cuda.o
cuda.cu(12): error: identifier "bar" is undefined
      out[i] = bar(x[i]);
               ^

cuda.cu(20): error #20: identifier "blockDimx" is undefined

cuda.cu(12): error: identifier "bar" is undefined

cuda.cu(31): warning #177-D: variable "unused" was declared but never referenced

3 errors detected in the compilation of "/root/.cache/torch_extensions/py311_cu126/fused/cuda.cu".
ninja: build stopped: subcommand failed.
)";
  auto d = parse_compiler_errors(log);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, "cuda.cu");
  EXPECT_EQ(d[0].line, 12);
  EXPECT_EQ(d[0].column, 0);
  EXPECT_EQ(d[0].message, "identifier \"bar\" is undefined");
  EXPECT_EQ(d[1].line, 20);
  EXPECT_EQ(d[1].message, "identifier \"blockDimx\" is undefined");
  EXPECT_EQ(format_diagnostics(d),
            "cuda.cu:12: error: identifier \"bar\" is undefined\n"
            "cuda.cu:20: error: identifier \"blockDimx\" is undefined");
}

TEST(Diagnostics, NvccToolErrors) {
  auto d = parse_compiler_errors(
      "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
      "ptxas error   : Entry function '_Z6kernelPf' uses too much shared data\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, "nvcc");
  EXPECT_EQ(d[0].severity, "fatal error");
  EXPECT_EQ(d[0].message, "Unsupported gpu architecture 'compute_120a'");
  EXPECT_EQ(d[1].file, "ptxas");
  EXPECT_EQ(d[1].line, 0);
}

TEST(Diagnostics, LinkerErrors) {
  const char* log = R"([2/3] c++ main.o cuda.cuda.o -shared -L/usr/lib/python3/dist-packages/torch/lib -lc10 -ltorch -o fused.so
FAILED: fused.so
c++ main.o cuda.cuda.o -shared -lc10 -ltorch -o fused.so
/usr/bin/ld: main.o: in function `forward(at::Tensor)':
main.cpp:(.text+0x2a): undefined reference to `launch_fused(float*, int)'
/usr/bin/ld: main.o:(.data.rel+0x8): undefined reference to `fused_table'
/usr/bin/ld: main.o: in function `forward(at::Tensor)':
main.cpp:(.text+0x2a): undefined reference to `launch_fused(float*, int)'
/usr/bin/ld: undefined reference to `orphan_symbol'
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
)";
  auto d = parse_compiler_errors(log);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].file, "main.cpp");
  EXPECT_EQ(d[0].line, 0);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_EQ(d[0].message, "undefined reference to `launch_fused(float*, int)'");
  EXPECT_EQ(d[1].file, "main.o");
  EXPECT_EQ(d[1].message, "undefined reference to `fused_table'");
  EXPECT_EQ(d[2].file, "ld");
  EXPECT_EQ(format_diagnostics({d[0]}),
            "main.cpp: error: undefined reference to `launch_fused(float*, int)'");

  // The collect2 summary stays only when nothing else explains the failure.
  auto only = parse_compiler_errors("collect2: error: ld returned 1 exit status\n");
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].file, "collect2");
  EXPECT_EQ(only[0].message, "ld returned 1 exit status");
}

TEST(Diagnostics, ColouredAndCrlfLines) {
  auto d = parse_compiler_errors(
      "\x1b[01m\x1b[Kmain.cpp:3:7:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[Kbad thing\r\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "main.cpp");
  EXPECT_EQ(d[0].line, 3);
  EXPECT_EQ(d[0].column, 7);
  EXPECT_EQ(d[0].message, "bad thing");
}

TEST(Diagnostics, NothingInACleanLog) {
  EXPECT_TRUE(parse_compiler_errors("").empty());
  EXPECT_TRUE(parse_compiler_errors("[1/1] c++ -c main.cpp -o main.o\n"
                                    "main.cpp:4:2: warning: unused [-Wunused]\n"
                                    "main.cpp:4:2: note: declared here\n")
                  .empty());
  EXPECT_EQ(format_diagnostics({}), "");
}

const char* kExecTraceback = R"(Traceback (most recent call last):
  File "/work/kbv/python/kbv_worker/candidate.py", line 88, in run
    out = model(*inputs)
          ^^^^^^^^^^^^^^
  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/tmp/kbv/sol_17/solution.py", line 41, in forward
    return self.fused.fused_cuda(x, self.weight)
  File "/tmp/kbv/sol_17/solution.py", line 23, in helper
    y = x.view(-1, 7)
  File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 12, in view
    raise RuntimeError("shape mismatch")
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
)";

TEST(Traceback, LastFrameInTheHintedFile) {
  PythonError e = parse_python_traceback(kExecTraceback, "/tmp/kbv/sol_17/solution.py");
  EXPECT_EQ(e.file, "/tmp/kbv/sol_17/solution.py");
  EXPECT_EQ(e.line, 23);
  EXPECT_EQ(e.function, "helper");
  EXPECT_EQ(e.exception, "RuntimeError: CUDA error: an illegal memory access was encountered");
}

TEST(Traceback, LastFrameWithoutHintOrWhenHintAbsent) {
  PythonError e = parse_python_traceback(kExecTraceback);
  EXPECT_EQ(e.file, "/usr/lib/python3/dist-packages/torch/_tensor.py");
  EXPECT_EQ(e.line, 12);
  EXPECT_EQ(e.function, "view");
  e = parse_python_traceback(kExecTraceback, "/somewhere/else.py");
  EXPECT_EQ(e.file, "/usr/lib/python3/dist-packages/torch/_tensor.py");
}

TEST(Traceback, SyntaxErrorInExecdCode) {
  const char* tb = R"(Traceback (most recent call last):
  File "/work/kbv/python/kbv_worker/load.py", line 30, in load_candidate
    exec(compile(source, "<candidate>", "exec"), namespace)
  File "<candidate>", line 5
    def forward(self x):
                     ^
SyntaxError: invalid syntax
)";
  PythonError e = parse_python_traceback(tb, "<candidate>");
  EXPECT_EQ(e.file, "<candidate>");
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.function, "");
  EXPECT_EQ(e.exception, "SyntaxError: invalid syntax");
}

TEST(Traceback, ChainedExceptionsUseTheLast) {
  const char* tb = R"(Traceback (most recent call last):
  File "<candidate>", line 3, in <module>
    import missing_mod
ModuleNotFoundError: No module named 'missing_mod'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "<candidate>", line 5, in <module>
    raise ImportError("fallback failed")
ImportError: fallback failed
)";
  PythonError e = parse_python_traceback(tb);
  EXPECT_EQ(e.file, "<candidate>");
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.function, "<module>");
  EXPECT_EQ(e.exception, "ImportError: fallback failed");
}

TEST(Traceback, NoFrames) {
  PythonError e = parse_python_traceback("\nKeyboardInterrupt\n\n");
  EXPECT_EQ(e.file, "");
  EXPECT_EQ(e.line, 0);
  EXPECT_EQ(e.exception, "KeyboardInterrupt");
  EXPECT_EQ(parse_python_traceback("").exception, "");
}


// A solution as a user writes it and the main.cpp load_inline generates from its string (the
// example examples/level1/19_ReLU/cpu_compile_error.py and the file torch 2.11 wrote for it).
constexpr const char* kSolutionPy = R"(import torch
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto y = torch::empty_like(x)
    const float* in = x.data_ptr<float>();
    return yy;
}
"""

relu_ext = load_inline(name="relu", cpp_sources=cpp_source, functions=["relu_cpu"])
)";
constexpr const char* kGeneratedMainCpp = R"(#include <torch/extension.h>

#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    auto y = torch::empty_like(x)
    const float* in = x.data_ptr<float>();
    return yy;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
m.def("relu_cpu", torch::wrap_pybind_function(relu_cpu), "relu_cpu");
}
)";

TEST(SourceLine, MapsAGeneratedLineToTheLineOfThePythonFile) {
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 7), 9);  // const float* in ...
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 8), 10);  // return yy;
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 5), 7);   // the function's first line
  // A closing brace occurs in many places; the lines around it place it.
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 9), 11);
}

TEST(SourceLine, NoLineForTextTheUserDidNotWrite) {
  // The pybind module load_inline adds is nowhere in the solution.
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 12), std::nullopt);
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 0), std::nullopt);
  EXPECT_EQ(source_line_of(kGeneratedMainCpp, kSolutionPy, 99), std::nullopt);
  // The string written with escapes ("...\n...") is not found verbatim: no guess.
  EXPECT_EQ(source_line_of(kGeneratedMainCpp,
                           "src = \"#include <torch/extension.h>\\ntorch::Tensor relu_cpu(torch::Tensor x) {\"\n", 5),
            std::nullopt);
}

TEST(SourceLine, TwoEqualCopiesAreAmbiguous) {
  const std::string block = "int f() {\n  return x;\n}\n";
  const std::string py = "a = \"\"\"\n" + block + "\"\"\"\nb = \"\"\"\n" + block + "\"\"\"\n";
  EXPECT_EQ(source_line_of("#include <x>\n" + block, py, 3), std::nullopt);
  // One copy: found.
  EXPECT_EQ(source_line_of("#include <x>\n" + block, "a = \"\"\"\n" + block + "\"\"\"\n", 3), 3);
}

}  // namespace diagnostics_test
}  // namespace kbv
