#include "supervisor/precision.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

namespace kbv {
using nlohmann::json;

bool valid_precision(const std::string& precision) { return !precision_dtype(precision).empty(); }

std::string precision_dtype(const std::string& precision) {
  if (precision == "fp32") return "float32";
  if (precision == "bf16") return "bfloat16";
  if (precision == "fp16") return "float16";
  return "";
}

double precision_tolerance(const std::string& precision) { return precision == "fp32" ? 1e-3 : 1e-2; }

void set_precision(Protocol& protocol, const std::string& precision) {
  protocol.precision = precision;
  // Each protocol's own tolerance is its fp32 one (kernelbench-main's 1e-4 stays at fp32).
  if (precision == "fp32") return;
  double t = precision_tolerance(precision);
  protocol.atol = std::max(protocol.atol, t);
  protocol.rtol = std::max(protocol.rtol, t);
  protocol.rel_l2 = std::max(protocol.rel_l2, t);
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The floating dtypes among the input handles, in order, without repeats.
std::vector<std::string> floating_dtypes(const json& args) {
  std::vector<std::string> out;
  auto visit = [&](const auto& self, const json& a) -> void {
    if (!a.is_object()) return;
    if (a.value("kind", "") == "tensor") {
      std::string d = a.value("dtype", "");
      if (d.rfind("float", 0) == 0 || d == "bfloat16")
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    if (a.contains("items") && a["items"].is_array())
      for (const auto& i : a["items"]) self(self, i);
  };
  if (args.is_array())
    for (const auto& a : args) visit(visit, a);
  return out;
}

}  // namespace

std::optional<std::string> dtype_fallback_message(const std::string& error, const std::string& precision,
                                                  const json& args) {
  if (precision == "fp32" || !valid_precision(precision)) return std::nullopt;
  const std::string dtype = precision_dtype(precision);
  std::vector<std::string> got = floating_dtypes(args);
  if (std::find(got.begin(), got.end(), dtype) == got.end()) return std::nullopt;  // it never saw one
  const std::string m = lower(error);
  // What torch and hand-written checks say when a float32-only kernel meets another dtype.
  static const char* kAsksForFloat[] = {
      "expected scalar type float",  // data_ptr<float>() on a bf16/fp16 tensor
      "kfloat",                      // TORCH_CHECK(x.scalar_type() == at::kFloat), torch::kFloat32
      "scalartype::float",           // dispatch/ScalarType messages
      "float32",                     // "must be float32", torch.float32
      "data_ptr<float>",
      "expected float",
      "must be float",
      "must be a float",
      "only supports float",
      "only float",
      "dtype float",
      "float tensor",
      "but found float",             // mixed: the kernel's own float32 buffer against bf16 inputs
      "got float",
  };
  bool asks = false;
  for (const char* p : kAsksForFloat)
    if (m.find(p) != std::string::npos) asks = true;
  // Dispatch macros without the reduced type: "\"my_kernel\" not implemented for 'BFloat16'".
  const std::string torch_name = precision == "bf16" ? "'bfloat16'" : "'half'";
  if (m.find("not implemented for " + torch_name) != std::string::npos) asks = true;
  if (!asks) return std::nullopt;
  std::string first_line = error.substr(0, error.find('\n'));
  if (first_line.size() > 300) first_line = first_line.substr(0, 300) + "...";
  return fmt::format(
      "the kernel does not accept {} inputs (a {} evaluation hands every floating input as {}; it fails with: {}). "
      "Dispatch on the input's dtype (AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ...)) or template "
      "the kernel on the element type instead of assuming float",
      dtype, precision, dtype, first_line);
}

void merge_reference_error(json& worst, const json& draw, const std::string& distribution) {
  if (!draw.is_array()) return;
  if (!worst.is_array()) worst = json::array();
  for (const auto& e : draw) {
    if (!e.is_object()) continue;
    size_t i = e.value("output", size_t{0});
    while (worst.size() <= i) worst.push_back(json(nullptr));
    json& w = worst[i];
    if (w.is_null() || e.value("tolerance_used", 0.0) > w.value("tolerance_used", 0.0)) {
      json copy = e;
      copy["distribution"] = distribution;
      w = copy;
    }
  }
}

}  // namespace kbv
