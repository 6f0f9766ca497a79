#include "worker/problem_sizes.h"

namespace py = pybind11;

namespace kbv {
namespace {

// The helper module, compiled once per worker. Python, because the tracing is a TorchDispatchMode.
constexpr const char* kSource = R"PY(
import torch
from torch.utils._python_dispatch import TorchDispatchMode

FLOOR = 16             # integers up to this are structure (axes, kernels, strides, groups, heads)
BUDGET = 16 << 20      # auto: inputs + parameters + outputs of one call

def _tensors(value, out):
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, out)
    return out

def _what(e):
    text = str(e).strip().splitlines()
    return type(e).__name__ + (": " + text[0] if text else "")

def meta_inputs(module):
    try:
        with torch.device("meta"):
            inputs = list(module.get_inputs())
    except Exception as e:
        return None, "get_inputs() needs values on the meta device (" + _what(e)[:300] + ")"
    placed = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.device.type != "meta"]
    if placed:
        return None, "get_inputs() places input(s) %s on a device itself" % placed
    return inputs, ""

def meta_model(model_class, args):
    try:
        with torch.device("meta"):
            return model_class(*args), ""
    except Exception as e:
        return None, "the Model does not build on the meta device (" + _what(e)[:300] + ")"

def _dims(x, dim):
    if dim is None or not isinstance(x, torch.Tensor) or x.dim() == 0:
        return None
    if isinstance(dim, int):
        dim = [dim]
    if not isinstance(dim, (list, tuple)) or not all(isinstance(d, int) for d in dim):
        return None
    dim = sorted({d % x.dim() for d in dim})
    if not dim or len(dim) == x.dim():
        return None  # a full reduction to one number: its sizes are scaled (docs/PROBLEMS.md)
    return dim

_aten = torch.ops.aten
_REDUCE = {getattr(_aten, n) for n in (
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "logsumexp", "var", "std",
    "var_mean", "std_mean", "any", "all", "nansum", "median", "nanmedian", "mode", "_softmax", "_log_softmax",
    "softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "kthvalue")
    if hasattr(_aten, n)}
_NORM = {getattr(_aten, n) for n in ("norm", "linalg_vector_norm") if hasattr(_aten, n)}
_BATCH_NORM = {getattr(_aten, n) for n in ("native_batch_norm", "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional") if hasattr(_aten, n)}

class _Reductions(TorchDispatchMode):
    """Records the sizes of the dimensions the forward reduces or normalises over, with the op."""
    def __init__(self):
        super().__init__()
        self.seen = []  # (op, sizes reduced over), in call order

    def _keep(self, sizes, op):
        self.seen.append((op, tuple(int(s) for s in sizes)))

    def _see(self, func, args, kwargs):
        p = func.overloadpacket
        name = p.__name__
        x = args[0] if args else None
        if p in _REDUCE:
            dim = kwargs.get("dim", args[1] if len(args) > 1 and isinstance(args[1], (int, list, tuple)) else None)
            d = _dims(x, dim)
            if d: self._keep([x.shape[i] for i in d], name)
        elif p in _NORM:
            d = _dims(x, kwargs.get("dim", args[2] if len(args) > 2 else None))
            if d: self._keep([x.shape[i] for i in d], name)
        elif name == "native_layer_norm" or "rms_norm" in name:
            n = args[1] if len(args) > 1 else kwargs.get("normalized_shape")
            k = len(n) if isinstance(n, (list, tuple)) else 1
            self._keep(x.shape[x.dim() - k:], name)
        elif name == "native_group_norm":
            self._keep(x.shape[1:], name)
        elif p in _BATCH_NORM:
            training = args[5] if len(args) > 5 else kwargs.get("training", True)
            if training: self._keep([x.shape[0]] + list(x.shape[2:]), name)
        elif name in ("mm", "bmm", "dot", "mv", "vdot"):
            self._keep([x.shape[-1]], name)
        elif name in ("addmm", "baddbmm", "addbmm", "addmv") and len(args) > 1:
            self._keep([args[1].shape[-1]], name)
        elif name == "convolution" or name.startswith("conv"):
            if isinstance(x, torch.Tensor) and x.dim() > 1: self._keep([x.shape[1]], name)
        elif "scaled_dot_product" in name and len(args) > 1:
            self._keep([args[1].shape[-2], x.shape[-1]], name)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            self._see(func, args, kwargs)
        except Exception:
            pass
        return func(*args, **kwargs)

def _trace(module):
    """Builds the model and runs one forward on meta tensors: (what its reductions and
    normalisations run over, bytes of one call)."""
    with torch.device("meta"):
        init = list(module.get_init_inputs())
        model = module.Model(*init)
        inputs = list(module.get_inputs())
    with torch.no_grad(), _Reductions() as r:
        out = model(*inputs)
    held = _tensors(inputs, []) + list(model.parameters()) + list(model.buffers()) + _tensors(out, [])
    shapes = [tuple(t.shape) for t in _tensors(inputs, []) + list(model.parameters())]
    return r.seen, sum(t.numel() * t.element_size() for t in held), shapes

def _read_names(module):
    names = set()
    def walk(code):
        names.update(code.co_names)
        for c in code.co_consts:
            if hasattr(c, "co_names"): walk(c)
    for f in ("get_inputs", "get_init_inputs"):
        walk(getattr(module, f).__code__)
    return names

def _sizes(value):
    """The integers of a size constant (an int, or a tuple/list of ints), else None."""
    if isinstance(value, bool): return None
    if isinstance(value, int): return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None

def _scaled(v, f):
    if v <= FLOOR or f >= 1: return v
    n = max(FLOOR, int(v * f))
    if v % 2 and not n % 2: n += 1  # odd sides stay odd (padding and window edges)
    return min(n, v)

def _with(module, values, fn):
    saved = {k: getattr(module, k) for k in values}
    try:
        for k, v in values.items(): setattr(module, k, v)
        return fn()
    finally:
        for k, v in saved.items(): setattr(module, k, v)

def _replace(value, i, x):
    if isinstance(value, int): return x
    items = list(value)
    items[i] = x
    return type(value)(items)

def _changed(before, after):
    """The first op whose reduced sizes differ between two traces."""
    for (op, a), (_, b) in zip(before, after):
        if a != b: return op
    return None if len(before) == len(after) else "the forward's ops"

def reduced_sizes(module, spec):
    """(overrides, summary, error)."""
    try:
        seen, full, shapes = _trace(module)
    except Exception as e:
        return {}, "", "the problem does not build and run on meta tensors, so the dimensions its reductions run over are unknown (" + _what(e)[:300] + ")"
    names = sorted(n for n in _read_names(module) if hasattr(module, n) and _sizes(getattr(module, n)) is not None)
    # A size is kept when halving it alone changes what a reduction or normalisation runs over
    # (or the problem does not run with it halved); an integer whose halving changes no input or
    # parameter shape is not a size (a class count read by randint, a seed) and stays.
    kept, values = {}, set()
    for n in names:
        v = getattr(module, n)
        for i, x in enumerate(_sizes(v)):
            if x <= FLOOR: continue
            try:
                after, _, shapes_after = _with(module, {n: _replace(v, i, x // 2)}, lambda: _trace(module))
                op = _changed(seen, after)
                if not op and shapes_after == shapes: values.add((n, i))
            except Exception as e:
                op = "does not run halved: " + _what(e)[:120]
            if op: kept[(n, i)] = op
    def at(f):
        out = {}
        for n in names:
            v = getattr(module, n)
            s = [x if (n, i) in kept or (n, i) in values else _scaled(x, f) for i, x in enumerate(_sizes(v))]
            if s != _sizes(v): out[n] = s[0] if isinstance(v, int) else type(v)(s)
        return out
    factors = [0.5 ** k for k in range(0, 31)] if spec == "auto" else [float(spec)]
    chosen, cost, error = None, full, ""
    for f in factors:
        o = at(f)
        if chosen is not None and o == chosen[1]: break  # nothing left to scale
        try:
            _, cost_f, _ = _with(module, o, lambda: _trace(module))
        except Exception as e:
            error = "at x%g: %s" % (f, _what(e)[:300])
            if spec != "auto": return {}, "", "the problem does not build or run " + error
            continue
        chosen, cost = (f, o), cost_f
        if spec != "auto" or cost <= BUDGET: break
    if chosen is None:
        return {}, "", "no reduced size builds and runs (" + error + ")"
    f, o = chosen
    # Two smaller rungs below the chosen sizes, for the lint's extrapolation of output magnitudes to
    # the file's sizes (magnitudes()): each distinct and built and run on meta tensors.
    ladder, last = [], o
    for g in (f / 2, f / 4):
        og = at(g)
        if f >= 1 or og == last: break
        try:
            _with(module, og, lambda: _trace(module))
        except Exception:
            break
        ladder.append((g, og))
        last = og
    try:
        file_numel = sum(t.numel() for t in _tensors(meta_inputs(module)[0] or [], []))
    except Exception:
        file_numel = 0
    keep = ["%s=%s (%s)" % (n, getattr(module, n), op) for (n, i), op in sorted(kept.items())]
    keep += ["%s=%s (not a size)" % (n, getattr(module, n)) for (n, i) in sorted(values)]
    summary = "x%g: %s; kept: %s; one call %.1f MiB (%.1f MiB at full size)" % (
        f, ", ".join("%s %s -> %s" % (n, getattr(module, n), v) for n, v in o.items()) or "nothing scaled",
        ", ".join(keep) or "nothing", cost / 2**20, full / 2**20)
    return o, summary, "", ladder if f < 1 else [], file_numel

def magnitudes(module, ladder, seed):
    """[(input elements, [max |output| per output, None where not floating])]: at the sizes the
    module has now, then at each rung of `ladder` (module-level overrides), the Model built and run
    on one draw after manual_seed(seed). The module's globals are left as they were."""
    def run():
        torch.manual_seed(seed)
        model = module.Model(*list(module.get_init_inputs()))
        torch.manual_seed(seed)
        inputs = list(module.get_inputs())
        with torch.no_grad():
            out = _tensors(model(*inputs), [])
        n = sum(t.numel() for t in _tensors(inputs, []))
        return n, [float(t.detach().abs().max()) if t.is_floating_point() and t.numel() else None for t in out]
    return [run()] + [_with(module, o, run) for _, o in ladder]
)PY";

py::object helper() {
  // Never destroyed: the interpreter outlives no static of ours.
  static py::object* module = nullptr;
  if (!module) {
    py::module_ types = py::module_::import("types");
    py::module_ builtins = py::module_::import("builtins");
    py::object m = types.attr("ModuleType")("kbv_sizes");
    builtins.attr("exec")(builtins.attr("compile")(kSource, "<kbv problem_sizes>", "exec"), m.attr("__dict__"));
    module = new py::object(m);
  }
  return *module;
}

}  // namespace

MetaDraw meta_inputs(py::object module) {
  py::tuple r = helper().attr("meta_inputs")(module);
  return {r[0], r[1].cast<std::string>()};
}

MetaModel meta_model(py::object model_class, py::tuple args) {
  py::tuple r = helper().attr("meta_model")(model_class, args);
  return {r[0], r[1].cast<std::string>()};
}

ReducedSizes reduced_sizes(py::object module, const std::string& spec) {
  ReducedSizes out;
  py::tuple r = helper().attr("reduced_sizes")(module, spec);
  for (auto item : py::cast<py::dict>(r[0]))
    out.overrides[py::str(item.first).cast<std::string>()] = py::reinterpret_borrow<py::object>(item.second);
  out.summary = r[1].cast<std::string>();
  out.error = r[2].cast<std::string>();
  if (r.size() > 4) {
    out.ladder = r[3];
    out.file_input_numel = r[4].cast<int64_t>();
  }
  return out;
}

std::vector<Magnitude> magnitudes(py::object module, py::object ladder, uint64_t seed) {
  std::vector<Magnitude> out;
  py::list rows = helper().attr("magnitudes")(module, ladder, seed);
  for (auto item : rows) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(item);
    Magnitude m;
    m.input_numel = t[0].cast<int64_t>();
    py::list values = t[1];
    for (auto v : values) m.max_abs.push_back(v.is_none() ? std::optional<double>() : v.cast<double>());
    out.push_back(m);
  }
  return out;
}

}  // namespace kbv
