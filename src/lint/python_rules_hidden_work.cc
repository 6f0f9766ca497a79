// Python rules against work the timer does not see (lint/python_rules.h): T5 output caches, T2
// threads and processes, T1 streams of its own, T3 tensor subclasses and deferred outputs.
#include <map>
#include <set>

#include <fmt/format.h>

#include "lint/ops.h"
#include "lint/python_rules.h"

namespace kbv::pyrules {

// --- T5: output caches --------------------------------------------------------------------
// A key made from an input's identity, address, shape or content in `fi`'s body, the most
// specific one first: "x.data_ptr" and its line.
std::pair<std::string, int> PyRules::input_key(int fi) const {
  std::set<std::string> params(f_.funcs[fi].params.begin(), f_.funcs[fi].params.end());
  params.erase("self");
  std::pair<std::string, int> best{"", 0};
  int best_rank = 0;
  auto offer = [&](std::string what, int line, int rank) {
    if (rank > best_rank) best = {std::move(what), line}, best_rank = rank;
  };
  for (int s : body_of(fi)) {
    const PyStmt& st = f_.stmts[s];
    for (int k = st.begin; k < st.end; ++k) {
      const PyToken& x = t_[k];
      if (x.kind != PyKind::Name) continue;
      if ((x.text == "id" || x.text == "hash") && k + 2 < st.end && is_op(t_[k + 1], "(") &&
          params.count(t_[k + 2].text))
        offer(x.text + "(" + t_[k + 2].text + ")", x.line, 3);
      if (params.count(x.text) && k + 2 < st.end && is_op(t_[k + 1], ".")) {
        const std::string& a = t_[k + 2].text;
        if (in(a, {"data_ptr", "untyped_storage", "storage", "_cdata", "__array_interface__", "_version"}))
          offer(x.text + "." + a, x.line, 3);
        else if (in(a, {"tobytes", "numpy", "tolist", "item", "sum"}))
          offer("the content of " + x.text, x.line, 2);
        else if (in(a, {"shape", "size"}))
          offer(x.text + "." + a, x.line, 1);
      }
      if (params.count(x.text) && ((k + 1 < st.end && is_name(t_[k + 1], "is")) || (k > st.begin && is_name(t_[k - 1], "is"))))
        offer("the identity of " + x.text, x.line, 3);
      if (x.text == "equal" && k + 2 < st.end && is_op(t_[k + 1], "(") && params.count(t_[k + 2].text))
        offer("torch.equal(" + t_[k + 2].text + ", ...)", x.line, 2);
      if (x.text == "hashlib") offer("a hashlib digest of the input", x.line, 2);
    }
  }
  return best;
}

// Statements that run whenever `r` (in function fi) does: earlier siblings (compound ones by
// their header, with/try bodies whole), the headers above it, and r itself.
std::vector<std::pair<int, int>> PyRules::must_run(int fi, int r) const {
  std::vector<std::pair<int, int>> ranges = {{f_.stmts[r].begin, f_.stmts[r].end}};
  int def = f_.funcs[fi].stmt;
  for (int s = r; s != def && s >= 0; s = f_.stmts[s].parent) {
    int parent = f_.stmts[s].parent;
    if (parent < 0) break;
    if (parent != def) ranges.push_back({f_.stmts[parent].begin, f_.stmts[parent].end});
    for (int sib : f_.stmts[parent].body) {
      if (sib == s) break;
      const PyStmt& x = f_.stmts[sib];
      if (!x.compound || x.kw == "with" || x.kw == "try") {
        for (int d : subtree(f_, sib)) ranges.push_back({f_.stmts[d].begin, f_.stmts[d].end});
      } else {
        ranges.push_back({x.begin, x.end});  // if/for/while...: only the header surely runs
      }
    }
  }
  return ranges;
}

// The value of `return` reads state kept across calls: "self._cache[key]", a module-level dict.
std::string PyRules::persistent_read(int fi, int r) const {
  const PyStmt& st = f_.stmts[r];
  int b = st.begin + 1, e = st.end;
  if (b >= e) return "";
  while (b < e && is_op(t_[b], "(")) ++b;
  if (b >= e || t_[b].kind != PyKind::Name) return "";
  int next = b;
  Path p = dotted_at(t_, b, e, &next);
  bool called = next < e && is_op(t_[next], "(");
  int cls = f_.funcs[fi].cls;
  if (p[0] == "self" && p.size() >= 2) {
    if (cls >= 0 && f_.find_method(cls, p[1]) >= 0) return "";
    if (f_.is_handle(Path(p.begin(), p.begin() + 2), r)) return "";
    if (called && p.size() == 2) return "";  // self.layer(x)
    return join(Path(p.begin(), p.begin() + 2));
  }
  if (p.size() == 1 && !called) {
    // A module-level container (dict/list/None) that the function reads back.
    for (const PyAssign& a : f_.assigns) {
      if (f_.func_of[a.stmt] >= 0 || a.targets.size() != 1 || a.targets[0].second - a.targets[0].first != 1 ||
          t_[a.targets[0].first].text != p[0])
        continue;
      const PyToken& v = t_[a.value_begin];
      if (is_op(v, "{") || is_op(v, "[") || is_name(v, "None") || is_name(v, "dict") || is_name(v, "OrderedDict") ||
          is_name(v, "collections") || is_name(v, "weakref"))
        return p[0];
    }
  }
  return "";
}

void PyRules::cache_rule() {
  // Memoizing decorators on forward or on what computes with the kernel.
  for (size_t i = 0; i < f_.funcs.size(); ++i) {
    const PyFunc& fn = f_.funcs[i];
    if (f_.dead[fn.stmt] || !(fn.calls_kernel || reach_.count(static_cast<int>(i)))) continue;
    for (const Path& d : fn.decorators) {
      std::string j = join(d);
      if (j == "functools.lru_cache" || j == "functools.cache" || j == "functools.cached_property" ||
          j == "lru_cache" || j == "cache")
        report("output_cache", "reject", "T5", f_.stmts[fn.stmt].line,
               fmt::format("@{} on {}(): results are memoized by argument, so a repeated call returns the old "
                           "output instead of computing",
                           j, fn.name));
    }
  }
  if (forward_ < 0) return;
  auto [key, key_line] = input_key(forward_);
  for (int r : body_of(forward_)) {
    if (f_.stmts[r].kw != "return") continue;
    std::string state = persistent_read(forward_, r);
    if (state.empty()) continue;
    bool computes = false;
    for (auto [b, e] : must_run(forward_, r))
      for (const PyCall& c : calls_in(f_, b, e))
        if (f_.is_kernel_call(c, r)) computes = true;
    if (computes) continue;
    std::string keyed = key.empty() ? "" : fmt::format(", keyed on {} (line {})", key, key_line + offset_);
    report("output_cache", "reject", "T5", f_.stmts[r].line,
           fmt::format("forward returns {}, kept from an earlier call{}, on a path that runs no kernel: an "
                       "output cache. Every call must compute its output from its own inputs",
                       state, keyed));
  }
}

// --- T2: threads and processes ----------------------------------------------------------
void PyRules::thread_rule() {
  each_stmt([&](int, const PyStmt& st) {
    for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
      std::string j = join(r.canonical);
      bool thread = starts_with(j, "threading.Thread") || starts_with(j, "threading.Timer") ||
                    starts_with(j, "_thread.start_new") || starts_with(j, "concurrent.futures") ||
                    starts_with(j, "multiprocessing.") || j == "multiprocessing" || starts_with(j, "torch.multiprocessing") ||
                    starts_with(j, "subprocess.") || in(j, {"os.fork", "os.forkpty", "os.system", "os.popen",
                                                             "os.spawnl", "os.spawnv", "os.posix_spawn",
                                                             "torch.jit.fork", "torch.jit._fork", "asyncio.run",
                                                             "asyncio.create_task", "asyncio.ensure_future",
                                                             "asyncio.get_event_loop", "asyncio.new_event_loop"});
      if (thread)
        report("threads", "reject", "T2", r.line,
               fmt::format("{} runs work on another thread or process, which can finish after the call returns",
                           j));
    }
  });
}

// --- T1: streams of its own -------------------------------------------------------------
void PyRules::stream_rule() {
  std::set<std::string> callers;  // names bound to the caller's stream
  for (const PyAssign& a : f_.assigns)
    for (const PyCall& c : calls_in(f_, a.value_begin, a.value_end)) {
      std::string j = join(c.canonical);
      if (j == "torch.cuda.current_stream" || j == "torch.cuda.default_stream")
        for (auto [x, y] : a.targets) {
          int next = x;
          Path p = dotted_at(t_, x, y, &next);
          if (!p.empty()) callers.insert(join(p));
        }
    }
  int create_line = 0;
  std::string create;
  bool joined = false;
  each_stmt([&](int, const PyStmt& st) {
    for (const PyCall& c : calls_in(f_, st.begin, st.end)) {
      std::string j = join(c.canonical);
      if (j == "torch.cuda.Stream" || j == "torch.cuda.ExternalStream" || j == "torch.Stream" ||
          j == "torch.cuda.streams.Stream") {
        if (!create_line) create_line = c.line, create = j;
      }
      if (j == "torch.cuda.synchronize" || (c.path.size() >= 2 && c.path.back() == "synchronize")) joined = true;
      if (c.path.size() >= 2 && (c.path.back() == "wait_stream" || c.path.back() == "wait_event")) {
        Path receiver(c.path.begin(), c.path.end() - 1);
        if (receiver[0] == "?") {
          // torch.cuda.current_stream().wait_stream(s): the call before the '.'
          int dot = c.name - 1;
          if (dot > 0 && is_op(t_[dot - 1], ")")) {
            int depth = 0, k = dot - 1;
            for (; k > st.begin; --k) {
              if (is_op(t_[k], ")")) ++depth;
              if (is_op(t_[k], "(") && --depth == 0) break;
            }
            for (const PyCall& inner : calls_in(f_, st.begin, st.end))
              if (inner.open == k) {
                std::string ij = join(inner.canonical);
                if (ij == "torch.cuda.current_stream" || ij == "torch.cuda.default_stream") joined = true;
              }
          }
        } else if (callers.count(join(receiver))) {
          joined = true;
        }
      }
    }
  });
  if (!create_line) return;
  if (joined)
    report("side_stream", "warn", "T1", create_line,
           fmt::format("{}() makes a stream of its own; the caller's stream (or the host) waits for it, so the "
                       "timed stream covers its work",
                       create));
  else
    report("side_stream", "reject", "T1", create_line,
           fmt::format("{}() makes a stream of its own and nothing makes the caller's stream wait for it "
                       "(torch.cuda.current_stream().wait_stream(s)): the work runs outside the timed stream",
                       create));
}

// --- T3: tensor subclasses and deferred outputs -------------------------------------------
void PyRules::subclass_rule() {
  for (const PyClass& c : f_.classes) {
    if (f_.dead[c.stmt]) continue;
    for (const Path& b : c.bases) {
      std::string j = join(b);
      if (j == "torch.Tensor" || j == "torch._C._TensorBase" || j == "torch._C.TensorBase" ||
          j == "torch._tensor.Tensor")
        report("tensor_subclass", "reject", "T3", f_.stmts[c.stmt].line,
               fmt::format("class {} subclasses {}: outputs must be plain tensors whose values exist when the "
                           "call returns",
                           c.name, j));
    }
  }
  each_stmt([&](int, const PyStmt& st) {
    for (const PyRef& r : refs_in(f_, st.begin, st.end)) {
      std::string j = join(r.canonical);
      const std::string& last = r.path.back();
      if (last == "_make_subclass" || last == "_make_wrapper_subclass" || last == "__torch_function__" ||
          last == "__torch_dispatch__" || starts_with(j, "torch.utils._python_dispatch") ||
          starts_with(j, "torch.overrides.TorchFunctionMode") || starts_with(j, "torch._subclasses"))
        report("tensor_subclass", "reject", "T3", r.line,
               fmt::format("{} builds tensors whose behaviour is Python code (a subclass, a dispatch mode): "
                           "outputs must be plain tensors",
                           j));
    }
    for (int k = st.begin + 1; k + 1 < st.end; ++k)
      if (is_op(t_[k - 1], ".") && is_name(t_[k], "as_subclass") && is_op(t_[k + 1], "("))
        report("tensor_subclass", "reject", "T3", t_[k].line,
               ".as_subclass() turns the output into a tensor subclass: outputs must be plain tensors");
    if (st.kw == "def") {
      int k = st.begin;
      while (k < st.end && !is_name(t_[k], "def")) ++k;
      if (k + 1 < st.end && (t_[k + 1].text == "__torch_function__" || t_[k + 1].text == "__torch_dispatch__"))
        report("tensor_subclass", "reject", "T3", st.line,
               fmt::format("defines {}: tensors that run Python code when used are not plain outputs",
                           t_[k + 1].text));
    }
  });
}

}  // namespace kbv::pyrules
