#include "worker/own_calls.h"

#include <time.h>

#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

struct OwnFunctions::Function {
  PyCFunctionObject* object = nullptr;
  PyMethodDef* original = nullptr;
  PyMethodDef ours{};
  std::string name;
};

namespace {

enum class Mode { off, record, poison };

// The one patched set (the worker audits one candidate at a time, on the thread holding the GIL).
struct State {
  Mode mode = Mode::off;
  std::map<PyObject*, std::pair<size_t, PyMethodDef*>> by_self;  // m_self -> (index, original)
  int depth = 0;
  // record
  std::vector<OwnCall> calls;
  double own_cpu_ms = 0;
  // poison
  int64_t own_calls = 0, outputs_replaced = 0, elements_overwritten = 0;
  std::vector<std::pair<at::Tensor, at::Tensor>> restore;  // (argument, its genuine values)
  std::string error;
};
State g_state;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool is_tensor(PyObject* o) { return THPVariable_Check(o); }

// Copies of a call's arguments: tensors cloned (detached), everything else shared.
py::tuple copy_args(PyObject* args) {
  Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
  py::tuple out(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    if (is_tensor(a))
      out[i] = py::reinterpret_steal<py::object>(THPVariable_Wrap(THPVariable_Unpack(a).detach().clone()));
    else
      out[i] = py::reinterpret_borrow<py::object>(a);
  }
  return out;
}

py::object copy_kwargs(PyObject* kwargs) {
  if (!kwargs) return py::none();
  py::dict out;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs, &pos, &k, &v))
    out[py::handle(k)] = is_tensor(v) ? py::reinterpret_steal<py::object>(
                                            THPVariable_Wrap(THPVariable_Unpack(v).detach().clone()))
                                      : py::reinterpret_borrow<py::object>(v);
  return out;
}

// Every tensor of a call's arguments (positional, then keyword values).
std::vector<at::Tensor> tensors_in(PyObject* args, PyObject* kwargs) {
  std::vector<at::Tensor> out;
  for (Py_ssize_t i = 0; args && i < PyTuple_GET_SIZE(args); ++i)
    if (is_tensor(PyTuple_GET_ITEM(args, i))) out.push_back(THPVariable_Unpack(PyTuple_GET_ITEM(args, i)).detach());
  if (kwargs) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &k, &v))
      if (is_tensor(v)) out.push_back(THPVariable_Unpack(v).detach());
  }
  return out;
}

// Wrong values for `genuine`, same shape, dtype and device, in a new tensor: floating types
// alternate +-(max|finite genuine| + 1) along the elements (wrong in sign or size everywhere,
// finite, so that nan_to_num or a NaN test cannot undo it); integers + 1; booleans negated.
at::Tensor pattern_like(const at::Tensor& genuine) {
  at::Tensor g = genuine.detach();
  if (g.scalar_type() == at::kBool) return g.logical_not();
  if (!at::isFloatingType(g.scalar_type()) && !at::isComplexType(g.scalar_type())) return g.add(1);
  at::Tensor mag = g.numel() == 0 ? at::zeros({}, g.options().dtype(at::kDouble))
                                  : at::nan_to_num(g.abs().to(at::kDouble), 0.0, 0.0, 0.0).max();
  double m = mag.item<double>() + 1.0;
  at::Tensor sign = at::arange(g.numel(), g.options().dtype(at::kLong)).remainder(2).mul(-2).add(1);
  return sign.mul(m).to(g.scalar_type()).reshape(g.sizes()).contiguous();
}

// Elements of `after` that differ from `before` (NaN equal to NaN): a bool tensor.
at::Tensor changed(const at::Tensor& before, const at::Tensor& after) {
  at::Tensor ne = at::ne(after, before);
  if (at::isFloatingType(after.scalar_type()) || at::isComplexType(after.scalar_type()))
    ne = at::logical_and(ne, at::logical_not(at::logical_and(at::isnan(after), at::isnan(before))));
  return ne;
}

// The result with every tensor (alone, or in a tuple or list) replaced by its pattern.
PyObject* poison_result(PyObject* result) {
  auto replace = [&](PyObject* o) -> PyObject* {
    if (!is_tensor(o)) {
      Py_INCREF(o);
      return o;
    }
    ++g_state.outputs_replaced;
    return THPVariable_Wrap(pattern_like(THPVariable_Unpack(o)));
  };
  if (is_tensor(result)) {
    PyObject* r = replace(result);
    Py_DECREF(result);
    return r;
  }
  if (PyTuple_Check(result) || PyList_Check(result)) {
    const bool tuple = PyTuple_Check(result);
    Py_ssize_t n = tuple ? PyTuple_GET_SIZE(result) : PyList_GET_SIZE(result);
    PyObject* out = tuple ? PyTuple_New(n) : PyList_New(n);
    if (!out) return result;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = replace(tuple ? PyTuple_GET_ITEM(result, i) : PyList_GET_ITEM(result, i));
      if (tuple) PyTuple_SET_ITEM(out, i, item);
      else PyList_SET_ITEM(out, i, item);
    }
    Py_DECREF(result);
    return out;
  }
  return result;
}

// What every patched own function runs instead of pybind11's dispatcher (same flags:
// METH_VARARGS | METH_KEYWORDS, same `self`, the function's capsule).
PyObject* trampoline(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto it = g_state.by_self.find(self);
  if (it == g_state.by_self.end()) {
    PyErr_SetString(PyExc_RuntimeError, "kbv audit: an own function was called through a stale wrapper");
    return nullptr;
  }
  auto original = reinterpret_cast<PyCFunctionWithKeywords>(reinterpret_cast<void (*)()>(it->second.second->ml_meth));
  if (g_state.depth > 0 || g_state.mode == Mode::off) return original(self, args, kwargs);
  struct Depth {
    Depth() { ++g_state.depth; }
    ~Depth() { --g_state.depth; }
  } depth;
  if (g_state.mode == Mode::record) {
    OwnCall call;
    try {
      torch::NoGradGuard no_grad;
      call = {it->second.first, copy_args(args), copy_kwargs(kwargs)};
    } catch (const std::exception& e) {
      PyErr_Clear();
      if (g_state.error.empty()) g_state.error = std::string("recording an own call: ") + e.what();
      return original(self, args, kwargs);
    }
    double c0 = thread_cpu_ms();
    PyObject* result = original(self, args, kwargs);
    g_state.own_cpu_ms += thread_cpu_ms() - c0;
    g_state.calls.push_back(std::move(call));
    return result;
  }
  // Poison mode.
  ++g_state.own_calls;
  std::vector<at::Tensor> inputs, before;
  try {
    torch::NoGradGuard no_grad;
    inputs = tensors_in(args, kwargs);
    for (const auto& t : inputs) before.push_back(t.clone());
  } catch (const std::exception& e) {
    if (g_state.error.empty()) g_state.error = std::string("copying an own call's arguments: ") + e.what();
    return original(self, args, kwargs);
  }
  PyObject* result = original(self, args, kwargs);
  if (!result) return nullptr;
  try {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].numel() == 0 || inputs[i].sizes() != before[i].sizes()) continue;
      at::Tensor mask = changed(before[i], inputs[i]);
      int64_t n = mask.sum().item<int64_t>();
      if (n == 0) continue;
      g_state.restore.emplace_back(inputs[i], inputs[i].clone());
      inputs[i].copy_(at::where(mask, pattern_like(inputs[i]), inputs[i]));
      g_state.elements_overwritten += n;
    }
    return poison_result(result);
  } catch (const std::exception& e) {
    if (g_state.error.empty()) g_state.error = std::string("poisoning an own call's results: ") + e.what();
    return result;
  }
}

}  // namespace

OwnFunctions::OwnFunctions(const std::string& own_dir) {
  if (own_dir.empty()) return;
  py::list objects = py::module_::import("gc").attr("get_objects")();
  for (py::handle m : objects) {
    if (!PyModule_Check(m.ptr())) continue;
    PyObject* file = PyModule_GetFilenameObject(m.ptr());
    if (!file) {
      PyErr_Clear();
      continue;
    }
    std::string path = py::reinterpret_steal<py::object>(file).cast<std::string>();
    char* real = realpath(path.c_str(), nullptr);
    std::string canon = real ? real : path;
    std::free(real);
    if (!(canon.size() > own_dir.size() && canon.compare(0, own_dir.size(), own_dir) == 0 && canon[own_dir.size()] == '/'))
      continue;
    PyObject* dict = PyModule_GetDict(m.ptr());
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &k, &v)) {
      // pybind11's module functions: builtin functions whose self is their own function record
      // (a capsule before pybind11 3, an object of pybind11's record type since; not the module,
      // which a plain C function's self is and several would share), called with
      // METH_VARARGS | METH_KEYWORDS and no vectorcall of their own.
      if (!PyCFunction_Check(v)) continue;
      auto* f = reinterpret_cast<PyCFunctionObject*>(v);
      if (!f->m_self || PyModule_Check(f->m_self)) continue;
      if (f->m_ml->ml_flags != (METH_VARARGS | METH_KEYWORDS) || f->vectorcall != nullptr) continue;
      if (g_state.by_self.count(f->m_self)) continue;
      auto* fn = new Function;
      fn->object = f;
      fn->original = f->m_ml;
      fn->ours = *f->m_ml;
      fn->ours.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&trampoline));
      fn->name = fmt::format("{}.{}", PyModule_GetName(m.ptr()) ? PyModule_GetName(m.ptr()) : "?",
                             f->m_ml->ml_name ? f->m_ml->ml_name : "?");
      g_state.by_self[f->m_self] = {functions_.size(), fn->original};
      functions_.push_back(fn);
      keep_.push_back(py::reinterpret_borrow<py::object>(v));
    }
  }
  PyErr_Clear();
}

OwnFunctions::~OwnFunctions() {
  off();
  for (auto* f : functions_) {
    g_state.by_self.erase(f->object->m_self);
    delete f;
  }
  g_state.calls.clear();
}

std::vector<std::string> OwnFunctions::names() const {
  std::vector<std::string> out;
  for (const auto* f : functions_) out.push_back(f->name);
  return out;
}

void OwnFunctions::record() {
  off();
  g_state.calls.clear();
  g_state.own_cpu_ms = 0;
  g_state.error.clear();
  g_state.mode = Mode::record;
  for (auto* f : functions_) f->object->m_ml = &f->ours;
}

void OwnFunctions::poison() {
  off();
  g_state.own_calls = g_state.outputs_replaced = g_state.elements_overwritten = 0;
  g_state.error.clear();
  g_state.mode = Mode::poison;
  for (auto* f : functions_) f->object->m_ml = &f->ours;
}

void OwnFunctions::off() {
  for (auto* f : functions_) f->object->m_ml = f->original;
  g_state.mode = Mode::off;
  torch::NoGradGuard no_grad;
  for (auto r = g_state.restore.rbegin(); r != g_state.restore.rend(); ++r) r->first.copy_(r->second);
  g_state.restore.clear();
}

const std::vector<OwnCall>& OwnFunctions::calls() const { return g_state.calls; }
double OwnFunctions::own_cpu_ms() const { return g_state.own_cpu_ms; }

json OwnFunctions::poisoned() const {
  json j = {{"own_calls", g_state.own_calls},
            {"outputs_replaced", g_state.outputs_replaced},
            {"elements_overwritten", g_state.elements_overwritten}};
  if (!g_state.error.empty()) j["error"] = g_state.error;
  return j;
}

void OwnFunctions::replay(const std::function<void(bool)>& active) {
  torch::NoGradGuard no_grad;
  for (const OwnCall& c : g_state.calls) {
    // Fresh copies of the recorded arguments (outside the sampled window): a call that writes
    // in place starts from the recorded values every round.
    py::tuple args = copy_args(c.args.ptr());
    py::object kwargs = c.kwargs.is_none() ? py::object(py::none()) : copy_kwargs(c.kwargs.ptr());
    PyObject* fn = keep_[c.function].ptr();
    active(true);
    PyObject* r = PyObject_Call(fn, args.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr());
    active(false);
    if (!r) throw py::error_already_set();
    Py_DECREF(r);
  }
}

}  // namespace kbv
