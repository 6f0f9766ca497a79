// Problem sizes without tensors (docs/PROBLEMS.md "Shapes without tensors", "Reduced sizes"):
// get_inputs() on torch's meta device for `kbv problems`, and reduced sizes for `kbv
// lint-problems --cpu-sizes`: the module-level integer size constants that get_inputs() and
// get_init_inputs() read, scaled, except those a reduction or normalisation of the reference's
// forward runs over (found by tracing the forward on meta tensors). The reduced sizes become
// module overrides, applied as KBV_CPU's are.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/extension.h>

namespace kbv {

// One get_inputs() draw on the meta device: `inputs` (a list) when every input came out of it
// without values; otherwise `inputs` is None and `why` says why (the caller draws for real).
struct MetaDraw {
  pybind11::object inputs;
  std::string why;
};
MetaDraw meta_inputs(pybind11::object module);

// The problem's Model built inside torch.device("meta") on `args` (get_init_inputs()): no
// parameter or buffer allocated. `model` is None when the construction raised there (it needs
// values, e.g. an .item() on a parameter), and `why` says so: the caller builds it for real.
struct MetaModel {
  pybind11::object model;
  std::string why;
};
MetaModel meta_model(pybind11::object model_class, pybind11::tuple args);

struct ReducedSizes {
  std::map<std::string, pybind11::object> overrides;  // global -> its reduced value
  std::string summary;  // one line: the factor, what was scaled, what was kept and why
  std::string error;    // the sizes could not be reduced (the problem is loaded as it is)
  // Up to two smaller rungs below the chosen factor ([(factor, overrides)], None or [] when the
  // sizes were not reduced), and the input elements of one get_inputs() draw at the file's sizes
  // (0 when unknown): what the lint extrapolates output magnitudes from and to (magnitudes()).
  pybind11::object ladder = pybind11::none();
  int64_t file_input_numel = 0;
};
// `spec`: "auto" (the largest factor 1/2^k at which the inputs, parameters and outputs of one
// call fit in 16 MiB) or a factor in (0, 1]. The module's globals are left as they were.
ReducedSizes reduced_sizes(pybind11::object module, const std::string& spec);

// The reference's output magnitudes at the module's current sizes, then at each rung of `ladder`
// (ReducedSizes::ladder): one draw after manual_seed(seed), the Model built at those sizes.
struct Magnitude {
  int64_t input_numel = 0;                   // elements of the draw's input tensors
  std::vector<std::optional<double>> max_abs;  // per output; empty where not a floating tensor
};
std::vector<Magnitude> magnitudes(pybind11::object module, pybind11::object ladder, uint64_t seed);

}  // namespace kbv
