// Rules over the candidate's Python: the shared analysis (findings, reachable functions, what
// counts as PyTorch compute) and the entry point. The rules: lint/python_rules.h names their files.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lint/ops.h"
#include "lint/python_rules.h"

namespace kbv::pyrules {

namespace {

// torch.* functions that allocate, describe or configure rather than compute.
const std::set<std::string> kTorchAllowed = {
    "empty",     "empty_like",  "empty_strided", "zeros",      "zeros_like",  "ones",
    "ones_like", "full",        "full_like",     "tensor",     "as_tensor",   "asarray",
    "from_numpy", "from_dlpack", "frombuffer",   "device",     "dtype",       "Size",
    "Generator", "is_tensor",   "is_floating_point", "is_complex", "numel",   "no_grad",
    "enable_grad", "inference_mode", "set_grad_enabled", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast",  "finfo",      "iinfo",       "is_grad_enabled",
    "_assert",   "arange",      "manual_seed",   "seed",       "set_printoptions", "get_num_threads",
    "set_num_threads", "broadcast_shapes", "typename", "Tensor", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "use_deterministic_algorithms", "is_inference_mode_enabled",
    "get_device", "Stream", "Event", "cat_out_"};
const char* kTorchAllowedModules[] = {"torch.cuda.",    "torch.backends.", "torch.utils.",   "torch.version",
                                      "torch.testing.", "torch.jit.",      "torch.nn.init.", "torch.distributed.",
                                      "torch.library.", "torch.profiler.", "torch.random.",  "torch.hub.",
                                      "torch.autograd.", "torch.serialization.", "torch.types.", "torch.amp."};
const std::set<std::string> kLayerNotCompute = {"Parameter", "ParameterList", "ParameterDict", "ModuleList",
                                                "ModuleDict", "Module", "Identity", "Buffer"};

}  // namespace

void PyRules::run() {
  model_new_ = f_.class_index("ModelNew");
  if (model_new_ >= 0) forward_ = f_.find_method(model_new_, "forward");
  layers();
  reachable();
  patch_rule();
  inspection_rule();
  tamper_rule();
  dynamic_rule();
  rng_rule();
  regenerate_rule();
  cache_rule();
  thread_rule();
  stream_rule();
  subclass_rule();
  reference_rule();
  fallback_rule();
  kernel_rule();
  precision_rule();
}

void PyRules::report(const std::string& rule, const std::string& severity, const std::string& cheat, int line,
                     const std::string& message) {
  if (!reported_.insert({rule, line}).second) return;
  Finding x;
  x.rule = rule;
  x.severity = severity;
  x.cheat = cheat;
  x.file = file_;
  x.line = line + offset_;
  x.code = line_of(f_.source, line);
  x.message = message;
  out_.push_back(std::move(x));
}

std::string PyRules::fn_name(int s) const { return f_.func_of[s] >= 0 ? f_.funcs[f_.func_of[s]].name : ""; }

// Statements whose innermost function is `fi` (nested functions excluded), the def itself not.
std::vector<int> PyRules::body_of(int fi) const {
  std::vector<int> out;
  for (int s : subtree(f_, f_.funcs[fi].stmt))
    if (s != f_.funcs[fi].stmt && f_.func_of[s] == fi && !f_.dead[s]) out.push_back(s);
  return out;
}

void PyRules::layers() {
  for (const PyAssign& a : f_.assigns) {
    int cls = f_.class_of[a.stmt];
    if (cls < 0) continue;
    auto calls = calls_in(f_, a.value_begin, a.value_end);
    if (calls.empty() || calls[0].name != a.value_begin) continue;
    const Path& c = calls[0].canonical;
    if (c.size() != 3 || c[0] != "torch" || c[1] != "nn" || kLayerNotCompute.count(c[2])) continue;
    for (auto [x, y] : a.targets)
      if (y - x == 3 && is_name(t_[x], "self")) layers_[cls].insert(t_[x + 2].text);
  }
}

void PyRules::reachable() {
  if (forward_ < 0) return;
  std::vector<int> todo = {forward_};
  reach_.insert(forward_);
  while (!todo.empty()) {
    int fi = todo.back();
    todo.pop_back();
    int cls = f_.funcs[fi].cls;
    for (int s : body_of(fi))
      for (const PyCall& c : calls_in(f_, f_.stmts[s].begin, f_.stmts[s].end)) {
        int target = -1;
        if (c.path.size() == 2 && c.path[0] == "self" && cls >= 0) {
          target = f_.find_method(cls, c.path[1]);
          // self.block(x), block = Block(...) of the file: Block.forward.
          for (const PyAssign& a : f_.assigns) {
            if (target >= 0 || f_.class_of[a.stmt] != cls || a.targets.size() != 1) continue;
            auto [x, y] = a.targets[0];
            if (y - x != 3 || !is_name(t_[x], "self") || t_[x + 2].text != c.path[1]) continue;
            auto inner = calls_in(f_, a.value_begin, a.value_end);
            if (!inner.empty() && inner[0].path.size() == 1 && f_.class_index(inner[0].path[0]) >= 0)
              target = f_.find_method(f_.class_index(inner[0].path[0]), "forward");
          }
        }
        if (c.path.size() == 1) {
          for (size_t k = 0; k < f_.funcs.size() && target < 0; ++k)
            if (f_.funcs[k].cls < 0 && f_.funcs[k].name == c.path[0]) target = static_cast<int>(k);
          int ci = f_.class_index(c.path[0]);
          if (target < 0 && ci >= 0) target = f_.find_method(ci, "forward");
        }
        if (target >= 0 && reach_.insert(target).second) todo.push_back(target);
      }
  }
}

// Is there PyTorch compute in tokens [b, e) of statement s? Names the first one.
bool PyRules::torch_compute(int s, int b, int e, std::string* what, int* line) const {
  int cls = f_.class_of[s];
  for (int k = b; k < e; ++k)
    if (is_op(t_[k], "@") && k > b) {
      *what = "the @ operator";
      *line = t_[k].line;
      return true;
    }
  for (const PyCall& c : calls_in(f_, b, e)) {
    if (f_.is_kernel_call(c, s)) continue;
    std::string j = join(c.canonical);
    bool compute = false;
    if (c.canonical.size() >= 2 && c.canonical[0] == "torch") {
      bool allowed_module = false;
      for (const char* m : kTorchAllowedModules) allowed_module = allowed_module || starts_with(j, m);
      if (starts_with(j, "torch.nn.functional.") || starts_with(j, "torch.special.") ||
          starts_with(j, "torch.linalg.") || starts_with(j, "torch.fft.") || starts_with(j, "torch.ops.aten.") ||
          starts_with(j, "torch._C._nn."))
        compute = true;
      else if (c.canonical.size() == 3 && c.canonical[1] == "nn" && !kLayerNotCompute.count(c.canonical[2]))
        compute = true;  // torch.nn.ReLU()(x)
      else if (c.canonical.size() == 2 && !kTorchAllowed.count(c.canonical[1]))
        compute = true;
      else if (!allowed_module && c.canonical.size() > 2 && c.canonical[1] != "nn")
        compute = true;
    } else if (c.path.size() >= 2 && is_compute_method(c.path.back()) && !f_.is_handle(c.path, s) &&
               !f_.imports.count(c.path[0])) {
      compute = true;  // x.relu(), x.sum(), y.matmul(w)
    } else if (c.path.size() == 2 && c.path[0] == "?" && is_compute_method(c.path[1])) {
      compute = true;
    } else if (c.path.size() == 2 && c.path[0] == "self" && cls >= 0 && layers_.count(cls) &&
               layers_.at(cls).count(c.path[1])) {
      compute = true;  // self.linear(x), an nn.Linear
    } else if (j == "Model" || (c.path.size() >= 2 && c.path[0] == "Model")) {
      compute = true;
    } else if (c.path.size() == 2 && c.path[0] == "?" && c.path[1] == "forward") {
      compute = true;  // super().forward(x)
    }
    if (compute) {
      *what = (c.path[0] == "?" ? "." + c.path.back() + "()" : join(c.path) + "()");
      *line = c.line;
      return true;
    }
  }
  return false;
}

}  // namespace kbv::pyrules

namespace kbv {

void python_rules(const PyFacts& facts, const std::string& file, int line_offset, const std::string& precision,
                  std::vector<Finding>& out) {
  pyrules::PyRules(facts, file, line_offset, precision, out).run();
}

}  // namespace kbv
