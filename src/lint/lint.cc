#include "lint/lint.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "lint/python_syntax.h"
#include "lint/rules.h"
#include "lint/sources.h"

namespace kbv {

const std::vector<RuleInfo>& lint_rules() {
  static const std::vector<RuleInfo> rules = {
      {"side_stream", "T1", "reject", "work launched on a stream of its own that the caller's stream never waits for (warn when it does)"},
      {"threads", "T2", "reject", "threads, processes or host callbacks that can finish the work after the call returns (warn for C++ threads that are not detached)"},
      {"tensor_subclass", "T3", "reject", "outputs that are tensor subclasses, dispatch modes, __torch_function__"},
      {"patch_timer", "T4", "reject", "replacing clocks, CUDA events or synchronisation (time.perf_counter = ..., torch.cuda.Event.elapsed_time = ...)"},
      {"patch_harness", "T4", "reject", "replacing library functions or modules (torch.allclose = ..., setattr(torch, ...), sys.modules[...], mock.patch)"},
      {"output_cache", "T5", "reject", "returning an output kept from an earlier call (keyed on identity, pointer, shape or content; @lru_cache; static tensors in C++)"},
      {"regenerate_inputs", "T13", "reject", "drawing random tensors in forward, or calling get_inputs(): computing on inputs it made up"},
      {"rng_seed", "T13", "reject", "seeding or setting the state of a random generator (warn in __init__)"},
      {"reference_model", "T11", "reject", "inheriting from, importing or calling the reference Model"},
      {"try_fallback", "T11", "reject", "an except handler that computes with PyTorch"},
      {"no_kernel_defined", "T11", "reject", "no load_inline/load, @triton.jit or CuPy kernel in the file"},
      {"kernel_not_called", "T11", "reject", "ModelNew.forward never reaches the compiled code"},
      {"aten_compute", "T11", "reject", "the C++ wrapper returns what ATen/cuBLAS computes and has no kernel or loop of its own (warn when it has)"},
      {"precision_downgrade", "T12", "warn", "half/bf16/fp8/TF32 types, autocast, fast-math flags"},
      {"frame_inspection", "T14", "reject", "inspect.stack, sys._getframe, gc.get_objects, f_back/f_locals, settrace"},
      {"grader_tamper", "T14", "reject", "file descriptors, /proc, signals, ctypes memory access (os.dup2, write(), ptrace, ...)"},
      {"cpu_affinity", "T25", "reject", "changing a thread's CPU affinity (sched_setaffinity, pthread_setaffinity_np): the candidate and its baselines get the same CPUs"},
      {"dynamic_code", "T14", "reject", "exec, eval, compile, __import__, importlib, getattr(module, <computed name>)"},
      {"sources_unresolved", "", "warn", "C++/CUDA sources built at runtime: the C++ rules could not read them"},
      {"unparsable", "", "warn", "the Python could not be tokenized (the build reports the syntax error)"},
  };
  return rules;
}

const RuleInfo* find_rule(std::string_view id) {
  for (const auto& r : lint_rules())
    if (id == r.id) return &r;
  return nullptr;
}

bool below_precision(const std::string& what, const std::string& precision) {
  if (precision != "bf16" && precision != "fp16") return true;
  std::string w = what;
  std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto has = [&](std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const char* p) { return w.find(p) != std::string::npos; });
  };
  // 16-bit types of either kind (a kernel dispatching on kHalf and kBFloat16 runs the evaluated
  // one), TF32, tensor-core math and autocast are not below a 16-bit evaluation; fp8 is.
  return has({"fp8", "float8", "e4m3", "e5m2"});
}

void apply_policy(std::vector<Finding>& findings, Policy policy) {
  if (policy == Policy::lenient)
    for (auto& f : findings) f.severity = "warn";
}

bool LintReport::rejected() const { return first_reject() != nullptr; }

const Finding* LintReport::first_reject() const {
  for (const auto& f : findings)
    if (f.severity == "reject") return &f;
  return nullptr;
}

std::string LintReport::rejection_message() const {
  const Finding* f = first_reject();
  if (!f) return "";
  int more = -1;
  for (const auto& x : findings) more += x.severity == "reject";
  std::string m = fmt::format("{}:{}: {} ({}): {}", f->file, f->line, f->rule, f->cheat, f->message);
  if (more > 0) m += fmt::format(" (and {} more rejecting finding{})", more, more == 1 ? "" : "s");
  return m;
}

nlohmann::json LintReport::findings_json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : findings) a.push_back(f.to_json());
  return a;
}

nlohmann::json LintReport::to_json() const {
  return nlohmann::json{{"file", file},
                        {"policy", policy_name(policy)},
                        {"rejected", rejected()},
                        {"units", units},
                        {"findings", findings_json()}};
}

LintReport lint_solution(std::string_view code, const LintOptions& o) {
  LintReport report;
  report.file = o.file;
  report.policy = o.policy;
  PyFacts facts = analyze_python(code);
  std::vector<Finding> found;
  if (!facts.lex.error.empty()) {
    Finding f;
    f.rule = "unparsable";
    f.severity = "warn";
    f.file = o.file;
    f.line = facts.lex.error_line + o.line_offset;
    f.code = line_of(code, facts.lex.error_line);
    f.message = facts.lex.error + ": the rules read only what comes before it (the build will report the syntax error)";
    found.push_back(f);
  }
  RecoveredSources sources = recover_sources(facts, o.file, o.base_dir, o.line_offset);
  for (const auto& u : sources.units) {
    int lines = 1;
    for (char c : u.text.text) lines += c == '\n';
    report.units.push_back(fmt::format("{} at {}:{} ({} lines)", u.origin, u.file, u.line + u.line_offset, lines));
  }
  for (auto& f : sources.findings) found.push_back(std::move(f));
  python_rules(facts, o.file, o.line_offset, o.precision, found);
  cpp_rules(sources, code, o.precision, found);

  // One finding per (rule, place): the Python and the C++ rules can see the same line.
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (auto& f : found)
    if (seen.insert({f.rule, f.file, f.line}).second) report.findings.push_back(std::move(f));
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity == "reject";
    if (a.file != b.file) return a.file < b.file;
    return a.line < b.line;
  });
  apply_policy(report.findings, o.policy);
  return report;
}

}  // namespace kbv
