#include "worker/problem_stats.h"

#include <cmath>

#include <fmt/format.h>

#include "check/compare.h"
#include "check/precision.h"
#include "worker/problem_sizes.h"
#include "worker/python.h"
#include "worker/reference.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {
namespace {

// The same model and inputs in float64 (a deep copy of the model), compared with the float32
// outputs as the protocol compares a kernel's: if the float32 reference itself fails against the
// float64 result, an exact kernel can fail against it (the output is rounding noise, or the
// computation is ill-conditioned). A JSON list (one comparison per output), or a string saying why
// the check could not run.
json fp64_check(ReferenceState& s, const std::vector<py::object>& args, const std::vector<at::Tensor>& fp32,
                const Tolerance& tol) {
  std::vector<py::object> args64;
  for (const auto& arg : args) {
    if (THPVariable_Check(arg.ptr()) && (THPVariable_Unpack(arg.ptr()).scalar_type() == at::kFloat ||
                                         THPVariable_Unpack(arg.ptr()).scalar_type() == s.h.dtype))
      args64.push_back(wrap(THPVariable_Unpack(arg.ptr()).to(at::kDouble)));
    else
      args64.push_back(arg);
  }
  py::object saved = s.h.model;
  json result = json::array();
  try {
    s.h.model = py::module_::import("copy").attr("deepcopy")(saved).attr("double")();
    double seconds = 0;
    py::object out = s.h.forward(args64, "problem_error", "its forward failed", seconds);
    Outputs o = flatten_outputs(out);
    for (size_t i = 0; i < fp32.size() && i < o.tensors.size(); ++i) {
      at::Tensor exact = o.tensors[i].detach();
      if (at::isFloatingType(exact.scalar_type())) exact = exact.to(fp32[i].scalar_type());
      result.push_back(compare_tensors(exact, fp32[i], tol).to_json());
    }
  } catch (const WorkerError& e) {
    result = "the model does not run in float64: " + e.message;
  } catch (py::error_already_set& e) {
    result = python_error("problem_error", "the model does not run in float64", e).message;
  } catch (const std::exception& e) {
    result = std::string("the model does not run in float64: ") + e.what();
  }
  s.h.model = saved;
  return result;
}

// Upstream KernelBench's harness casts every input tensor to the precision's dtype, integers and
// bools included (eval.py `_process_input_tensor`: `input.to(dtype=precision)`); kbv never casts
// them. With an integer or bool input the reference runs once more as upstream would run it (on
// a copy of the model): {"dtype", "failed": why} or {"dtype", "comparisons": [per output, against
// the uncast outputs]}. Null when every input tensor is floating.
json upstream_cast_check(ReferenceState& s, const std::vector<py::object>& args, const std::vector<at::Tensor>& expected,
                         const Tolerance& tol) {
  at::ScalarType dtype = s.h.precision == "fp32" ? at::kFloat : s.h.dtype;
  std::vector<py::object> cast;
  bool any = false;
  for (const auto& arg : args) {
    if (THPVariable_Check(arg.ptr()) && !at::isFloatingType(THPVariable_Unpack(arg.ptr()).scalar_type())) {
      any = true;
      cast.push_back(wrap(THPVariable_Unpack(arg.ptr()).to(dtype)));
    } else {
      cast.push_back(arg);
    }
  }
  if (!any) return nullptr;
  json result = {{"dtype", dtype_name(dtype)}};
  py::object saved = s.h.model;
  try {
    s.h.model = py::module_::import("copy").attr("deepcopy")(saved);
    double seconds = 0;
    py::object out = s.h.forward(cast, "problem_error", "its forward failed", seconds);
    Outputs o = flatten_outputs(out);
    json comparisons = json::array();
    for (size_t i = 0; i < expected.size() && i < o.tensors.size(); ++i)
      comparisons.push_back(compare_tensors(expected[i], o.tensors[i].detach(), tol).to_json());
    if (o.tensors.size() != expected.size())
      result["failed"] = fmt::format("it returns {} output(s) where the uncast call returns {}", o.tensors.size(),
                                     expected.size());
    result["comparisons"] = comparisons;
  } catch (const WorkerError& e) {
    result["failed"] = e.message;
  } catch (py::error_already_set& e) {
    result["failed"] = python_error("problem_error", "its forward failed", e).message;
  } catch (const std::exception& e) {
    result["failed"] = std::string("its forward failed: ") + e.what();
  }
  s.h.model = saved;
  return result;
}

struct Draws {
  ReferenceState& s;
  const msg::LintRequest& request;
  Tolerance tol;
  bool on_device;
  json inputs = json::array();
  json fp64 = nullptr;  // float64 cross-check of draw A, per output (or why it did not run)
  json reduced_check = nullptr;  // below fp32: draw A's reference against the fp32 model, per output
  json upstream_cast = nullptr;  // integer/bool inputs: upstream_cast_check of draw A

  // A description of an input of draw A.
  static json describe_input(size_t i, const at::Tensor& t) {
    bool floating = at::isFloatingType(t.scalar_type());
    json in = {{"index", i}, {"dtype", dtype_name(t.scalar_type())}, {"sizes", t.sizes().vec()}, {"floating", floating}};
    // Whole numbers in a floating input (labels, +-1 signs) stop being labels once scaled.
    if (floating && t.numel() > 0)
      in["integer_valued"] =
          t.isfinite().all().item<bool>() && t.eq(t.round()).all().item<bool>() && t.ne(0).any().item<bool>();
    return in;
  }

  // One draw as the reference sees it in `inputs` (same seeding, same scaling), run once.
  // `poison`: tensors whose sizes to fill with NaN and free right before the call, so that a
  // reference returning memory it never wrote is likely to hand NaN back. Drawn as the linted
  // protocol draws (input_draw): on the GPU for kbv's.
  std::vector<at::Tensor> run(uint64_t seed, bool describe, const std::vector<at::Tensor>& poison) {
    Hosted& h = s.h;
    std::vector<py::object> args;
    py::list raw;
    try {
      raw = draw_inputs(s, seed, on_device);
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", "get_inputs() failed", e);
    }
    for (size_t i = 0; i < raw.size(); ++i) {
      py::object item = raw[i];
      if (!THPVariable_Check(item.ptr())) {
        if (describe) inputs.push_back({{"index", i}, {"value", py::str(py::repr(item)).cast<std::string>()}});
        args.push_back(item);
        continue;
      }
      at::Tensor t = THPVariable_Unpack(item.ptr());
      if (describe) inputs.push_back(describe_input(i, t));
      if (at::isFloatingType(t.scalar_type()) && request.scale != 1.0) t = t.mul(request.scale);
      if (h.precision != "fp32") t = cast_floating(t, h.dtype);
      args.push_back(wrap(t.to(h.torch_device())));
    }
    std::vector<py::object> fp32_args;
    if (describe && h.precision != "fp32")
      for (const auto& arg : args) fp32_args.push_back(h.fp32_arg(arg));
    {
      std::vector<at::Tensor> blocks;
      for (const auto& t : poison)
        if (at::isFloatingType(t.scalar_type())) blocks.push_back(at::full_like(t, NAN));
    }
    double seconds = 0;
    std::vector<at::Tensor> result = reference_outputs(s, args, "the reference Model's forward failed", seconds);
    if (describe) fp64 = fp64_check(s, args, result, tol);
    if (describe) upstream_cast = upstream_cast_check(s, args, result, tol);
    if (describe && h.precision != "fp32") reduced_check = fp32_cross_check(s, fp32_args, result, tol);
    return result;
  }
};

// Draw B's output against A's (a replay), all zeros and a constant (A's mean), and both draws'
// non-finite counts, into `o`.
void other_draw_stats(json& o, const at::Tensor& a, const at::Tensor& b, const Tolerance& tol) {
  bool floating = at::isFloatingType(b.scalar_type());
  auto count = [&](const at::Tensor& t, bool nan) -> int64_t {
    if (!floating) return 0;
    return (nan ? t.isnan() : t.isinf()).sum().item<int64_t>();
  };
  o["nan"] = {count(a, true), count(b, true)};
  o["inf"] = {count(a, false), count(b, false)};
  ValueStats stats = finite_stats(b);
  if (stats.count > 0) {
    o["mean"] = stats.mean;
    o["std"] = stats.std;
    o["max_abs"] = stats.max_abs;
  }
  json other = compare_tensors(b, a, tol).to_json();
  other["bitwise_equal"] = same_values(b, a);
  o["other_draw"] = other;
  // One scalar broadcast to the output's shape: no output-sized copy.
  auto filled = [&](const at::Scalar& v) { return at::full({}, v, b.options()).expand(b.sizes()); };
  o["zeros"] = compare_tensors(b, filled(0), tol).to_json();
  ValueStats a_stats = finite_stats(a);
  double c = a_stats.count > 0 ? a_stats.mean : 0.0;
  at::Tensor constant;
  if (b.scalar_type() == at::kBool)
    constant = filled(c >= 0.5);
  else if (!floating)
    constant = filled(static_cast<int64_t>(std::llround(c)));
  else
    constant = filled(c);
  json cj = compare_tensors(b, constant, tol).to_json();
  cj["value"] = c;
  o["constant"] = cj;
}

// At reduced sizes, for the draw at scale 1: each output's largest magnitude at these sizes and at
// the smaller rungs, with the input elements of each and of the file's sizes, into the output's
// "extrapolation" (supervisor/problem_lint.cc fits how it falls with the size and predicts the
// file's: a whole-tensor reduction, which the reduced sizes scale, hides a zeros pass there).
void extrapolation_points(ReferenceState& s, const msg::LintRequest& request, const Tolerance& tol, json& outputs) {
  if (request.scale != 1.0 || s.file_input_numel <= 0 || s.size_ladder.is_none() || py::len(s.size_ladder) == 0)
    return;
  std::vector<Magnitude> m;
  try {
    m = magnitudes(s.h.module, s.size_ladder, request.seeds[0]);
  } catch (py::error_already_set& e) {
    const std::string why = e.what();
    for (auto& o : outputs)
      if (o.contains("index")) o["extrapolation"] = {{"error", why.substr(0, 300)}};
    return;
  }
  for (auto& o : outputs) {
    if (!o.contains("index")) continue;
    const size_t i = o["index"].get<size_t>();
    json points = json::array();
    for (const auto& at : m)
      if (i < at.max_abs.size() && at.max_abs[i]) points.push_back({at.input_numel, *at.max_abs[i]});
    if (points.size() < 2) continue;
    o["extrapolation"] = {{"points", points}, {"file_input_numel", s.file_input_numel}, {"atol", tol.atol},
                          {"rtol", tol.rtol}, {"rel_l2", tol.use_rel_l2}};
  }
}

// Dropout in training mode: a different mask on every call.
std::vector<std::string> training_dropout(const py::object& model) {
  std::vector<std::string> dropout;
  py::object dropout_type = py::module_::import("torch.nn.modules.dropout").attr("_DropoutNd");
  for (auto item : model.attr("named_modules")()) {
    py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
    py::object m = pair[1];
    if (py::isinstance(m, dropout_type) && m.attr("training").cast<bool>() && m.attr("p").cast<double>() > 0)
      dropout.push_back(fmt::format("{} ({}, p={})", pair[0].cast<std::string>(),
                                    py::str(py::type::handle_of(m).attr("__name__")).cast<std::string>(),
                                    m.attr("p").cast<double>()));
  }
  return dropout;
}

// KBV_LINT_ALLOW = {"rule": "reason"}: findings the problem's author accepts, with the reason.
void allowed_findings(const py::object& module, msg::LintReply& reply) {
  if (!py::hasattr(module, "KBV_LINT_ALLOW")) return;
  py::object a_obj = module.attr("KBV_LINT_ALLOW");
  if (!py::isinstance<py::dict>(a_obj)) {
    reply.allow_error = "KBV_LINT_ALLOW must be a dict {\"rule\": \"reason\"}";
    return;
  }
  for (auto kv : py::cast<py::dict>(a_obj)) {
    if (!py::isinstance<py::str>(kv.first) || !py::isinstance<py::str>(kv.second)) {
      reply.allow_error = "KBV_LINT_ALLOW must map rule names (str) to reasons (str)";
      continue;
    }
    reply.allow[kv.first.cast<std::string>()] = kv.second.cast<std::string>();
  }
}

}  // namespace

msg::LintReply problem_statistics(ReferenceState& s, const msg::LintRequest& request) {
  if (request.seeds.size() < 2)
    throw WorkerError{"protocol_error", "a malformed 'lint' request: 'seeds' needs two seeds (draws A and B)", ""};
  Draws draws{s, request, tolerance_from(request.tolerance, 1e-3), draws_on_device(s, request.input_draw)};
  const Tolerance& tol = draws.tol;
  std::vector<at::Tensor> a = draws.run(request.seeds[0], true, {});
  std::vector<at::Tensor> repeat = draws.run(request.seeds[0], false, a);
  msg::LintReply reply;
  for (size_t i = 0; i < a.size(); ++i) {
    json o = {{"index", i}, {"dtype", dtype_name(a[i].scalar_type())}, {"sizes", a[i].sizes().vec()},
              {"numel", a[i].numel()}};
    if (i < repeat.size()) {
      json r = compare_tensors(a[i], repeat[i], tol).to_json();
      r["bitwise_equal"] = same_values(a[i], repeat[i]);
      o["repeat"] = r;
    }
    if (draws.fp64.is_array() && i < draws.fp64.size()) o["fp64"] = draws.fp64[i];
    if (draws.reduced_check.is_array() && i < draws.reduced_check.size()) o["reference_error"] = draws.reduced_check[i];
    reply.outputs.push_back(o);
  }
  if (draws.fp64.is_string()) reply.outputs.push_back({{"fp64_skipped", draws.fp64}});
  if (repeat.size() != a.size())
    reply.outputs.push_back({{"note", fmt::format("a second call on the same inputs returned {} output(s), the first {}",
                                                  repeat.size(), a.size())}});
  repeat.clear();
  std::vector<at::Tensor> b = draws.run(request.seeds[1], false, {});
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) other_draw_stats(reply.outputs[i], a[i], b[i], tol);
  if (b.size() != a.size())
    reply.outputs.push_back({{"note", fmt::format("draw B returned {} output(s), draw A {}", b.size(), a.size())}});
  reply.dropout = training_dropout(s.h.model);
  allowed_findings(s.h.module, reply);
  a.clear();
  b.clear();
  release_cached_memory(s.h.device);
  extrapolation_points(s, request, tol, reply.outputs);
  reply.inputs = draws.inputs;
  if (!draws.upstream_cast.is_null()) reply.upstream_cast = draws.upstream_cast;
  reply.training = s.h.model.attr("training").cast<bool>();
  reply.precision = s.h.precision;
  return reply;
}

}  // namespace kbv
