// The candidate's own extension functions, seen from outside its reach (issue 29; used by the
// runtime audit, worker/audit.*): the pybind11 functions of the modules loaded from the
// candidate's extension folder (load_inline, load). Their function objects are patched in place
// (their PyMethodDef swapped for kbv's, then put back), so a reference the candidate keeps in a
// variable or an attribute goes through kbv's wrapper as well as `ext.fn(...)` does.
//
// Two modes while patched:
//   record: every call's arguments are copied before it runs (tensors cloned) so that the audit
//           can replay the own calls alone under its sampler, and the CPU time spent inside own
//           calls is summed (the own part of the forward's time, a measurement).
//   poison: ablation. Every tensor an own call returns is replaced by a fresh tensor of wrong
//           finite values (alternating +-(max|genuine| + 1); integers + 1, booleans negated), and
//           every element of a tensor argument the call changed is overwritten with the same
//           pattern, so that nothing an own call computed reaches what follows it. The arguments
//           written in place get their genuine values back when the mode ends (a parameter the
//           candidate updates in place stays as the genuine call left it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/extension.h>

namespace kbv {

// One own call as recorded: the function object and copies of its arguments.
struct OwnCall {
  size_t function = 0;  // index into OwnFunctions::names()
  pybind11::tuple args;
  pybind11::object kwargs;  // a dict or None
};

class OwnFunctions {
 public:
  // Finds the own functions: module objects (from the garbage collector's list, since
  // torch.utils.cpp_extension does not put them in sys.modules) whose __file__ lies under
  // `own_dir`, and their module-level pybind11 functions. `own_dir` empty: none.
  explicit OwnFunctions(const std::string& own_dir);
  OwnFunctions(const OwnFunctions&) = delete;
  OwnFunctions& operator=(const OwnFunctions&) = delete;
  ~OwnFunctions();  // unpatches

  bool empty() const { return functions_.empty(); }
  std::vector<std::string> names() const;

  void record();  // patch, record mode (clears what was recorded before)
  void poison();  // patch, poison mode (clears the poisoning counts)
  void off();     // unpatch; in poison mode, the arguments written in place get their genuine values back

  // Record mode's results.
  const std::vector<OwnCall>& calls() const;
  double own_cpu_ms() const;  // CPU time of this thread inside own calls
  // Poison mode's results: own calls made, tensors replaced, argument elements overwritten, and
  // the first error met while poisoning ("" when none).
  nlohmann::json poisoned() const;

  // One replay of the recorded calls in order, on the original functions, each call's tensor
  // arguments refilled from the recording first; `active` is called with true right before each
  // own call and false right after it (the sampler counts only in between). Throws
  // pybind11::error_already_set when a call raises.
  void replay(const std::function<void(bool)>& active);

 private:
  struct Function;
  std::vector<Function*> functions_;
  std::vector<pybind11::object> keep_;  // the function objects, alive while patched
};

}  // namespace kbv
