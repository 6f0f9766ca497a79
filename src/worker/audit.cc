// The runtime audit's calls (worker/audit.h). Its CPU sampler: worker/cpu_sampler.cc; the threads
// it watches: worker/thread_watch.cc.
#include "worker/audit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "check/runtime_audit.h"
#include "worker/cpu_sampler.h"
#include "worker/own_calls.h"
#include "worker/python.h"
#include "worker/thread_watch.h"
#include "worker/timing.h"

#include <c10/util/Flags.h>

// c10's CPU allocator fills every new block with a NaN pattern (0x7fedbeef) while this is set.
C10_DECLARE_bool(caffe2_cpu_allocator_do_junk_fill);

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

using namespace audit;

namespace {

// ---------------------------------------------------------------------------------------------
py::object wrap(const at::Tensor& t) { return py::reinterpret_steal<py::object>(THPVariable_Wrap(t)); }

bool is_tensor(const py::object& o) { return THPVariable_Check(o.ptr()); }

std::vector<py::object> fresh_copies(const std::vector<py::object>& args) {
  std::vector<py::object> out;
  for (const auto& a : args) out.push_back(is_tensor(a) ? wrap(THPVariable_Unpack(a.ptr()).clone()) : a);
  return out;
}

void tensors_of(const std::vector<py::object>& args, std::vector<at::Tensor>& tensors, std::vector<int>& positions) {
  for (size_t i = 0; i < args.size(); ++i)
    if (is_tensor(args[i])) {
      tensors.push_back(THPVariable_Unpack(args[i].ptr()));
      positions.push_back(static_cast<int>(i));
    }
}

// Fills blocks the size of each tensor with NaN (floating) or 0x5A bytes, then frees them all:
// a kernel reading memory it never wrote is likely to get these blocks back. Returns a small
// block allocated after them, to keep alive until the call: on the CPU it stops the freed
// blocks from merging into the heap's top chunk, which glibc would trim (hand back to the OS,
// whose fresh pages are zero) instead of reusing.
at::Tensor poison_free_memory(const std::vector<at::Tensor>& like) {
  std::vector<at::Tensor> blocks;
  for (const auto& t : like) {
    if (!t.defined() || t.numel() == 0) continue;
    for (int copy = 0; copy < 2; ++copy) {
      at::Tensor b = at::empty_strided(t.sizes(), t.strides(), t.options());
      if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))
        b.fill_(NAN);
      else
        b.view(at::kByte).fill_(0x5A);
      blocks.push_back(b);
    }
  }
  at::Tensor fence = like.empty() ? at::empty({16}, at::kFloat) : at::empty({16}, like.front().options());
  return fence;
}

// Why the CPU sampler does not watch this device's calls; "" when it does.
std::string why_not_sampled(const std::string& device) {
  if (device != "cpu") return "CPU sampling audits CPU runs; on the GPU the kernels are audited by CUPTI";
  if (!KBV_SAMPLER) return "no CPU sampler for this architecture";
  if (own_dir().empty()) return "TORCH_EXTENSIONS_DIR is not set: the candidate's own objects are unknown";
  return "";
}

// More calls on the same buffers until the share is measured: from kMinSamples samples on,
// every 20, stop once the own share is clearly above or below kMinOwnShare
// (call_own_share, src/check/runtime_audit.h), else go on to 2 s of CPU time (a custom part
// near the line, or none), at most 5 s of wall time, and leave the decision to the point
// estimate. The kernel's tick (often 250 Hz) bounds the sampling rate, whatever the 1 ms
// period asks. A call that spends most of its wall time off the CPU (sleeping, waiting) gives
// few samples per second: short of the kMinComputeSamples that decide, calls go on up to 30 s
// of wall time (20 ms of sleep around 0.4 ms of work took 23 samples in 5 s at 250 Hz, and
// was undecided on a CI machine whose tick was 4 ms).
void sample_until_measured(const std::function<void()>& sampled_call, const int& calls, const double& cpu_ms) {
  constexpr size_t kMinSamples = 100;
  auto w0 = std::chrono::steady_clock::now();
  size_t checked = 0;
  for (;;) {
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const bool short_of_samples = g_count.load() < static_cast<size_t>(kMinComputeSamples);
    if ((wall > kSamplingWallS && !short_of_samples) || wall > kSamplingMaxWallS || calls >= 1000000 ||
        cpu_ms >= 2000.0)
      break;
    size_t now = g_count.load();
    if (now >= kMinSamples && now >= checked + 20) {
      checked = now;
      OwnSamples seen = own_samples(resolve(0, std::min<size_t>(now, kMaxSamples)));
      if (call_own_share(seen.own, seen.counted) != ShareCall::undecided) break;
    }
    sampled_call();
  }
}

}  // namespace

json storage_overlaps(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                      const std::vector<int>& positions) {
  json out = json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& o = outputs[i];
    if (!o.defined() || !o.has_storage() || o.storage().nbytes() == 0) continue;
    auto oa = reinterpret_cast<uintptr_t>(o.storage().data());
    auto ob = oa + o.storage().nbytes();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const at::Tensor& x = inputs[k];
      if (!x.defined() || !x.has_storage() || x.storage().nbytes() == 0) continue;
      if (x.device() != o.device()) continue;
      auto xa = reinterpret_cast<uintptr_t>(x.storage().data());
      auto xb = xa + x.storage().nbytes();
      if (oa < xb && xa < ob) out.push_back({{"output", i}, {"input", k < positions.size() ? positions[k] : -1}});
    }
  }
  return out;
}

json CandidateAudit::first(const std::vector<py::object>& args, const ForwardFn& forward, const std::string& device) {
  pristine_ = fresh_copies(args);
  first_args_ = fresh_copies(args);
  first_outputs_.clear();
  json reply = {{"ok", true}};

  std::string why_not = why_not_sampled(device);
  bool sample = why_not.empty();
  if (sample && !install_handler(why_not)) sample = false;

  // The candidate's own extension functions (worker/own_calls.h): the first call records their
  // calls, which the sampler then replays alone.
  OwnFunctions own(own_dir());
  // The trials were the warm-up: threads that exist now (torch's pools) are the baseline.
  std::set<int> before = thread_ids();
  g_count.store(0);
  double cpu_ms = 0;
  int calls = 0;
  std::string disturbed;  // the first disturbance of the sampler seen after a call
  auto timed_call = [&](bool keep) {
    double c0 = process_cpu_ms();
    g_active.store(sample, std::memory_order_relaxed);
    std::vector<at::Tensor> outs;
    if (keep) own.record();
    try {
      outs = forward(first_args_);
    } catch (...) {
      own.off();
      g_active.store(false, std::memory_order_relaxed);
      if (sample) arm_timer(false);
      throw;
    }
    own.off();
    g_active.store(false, std::memory_order_relaxed);
    cpu_ms += process_cpu_ms() - c0;
    ++calls;
    if (sample && disturbed.empty()) disturbed = sampler_disturbance();
    if (keep) {
      std::vector<at::Tensor> inputs;
      std::vector<int> positions;
      tensors_of(first_args_, inputs, positions);
      reply["aliases"] = storage_overlaps(outs, inputs, positions);
      for (const auto& o : outs) first_outputs_.push_back(o.detach().clone());
    }
  };
  // While sampling, ATen and OpenMP run on the calling thread: with a pool, the samples of its
  // idle workers spinning in libgomp (most of them on a loaded machine) drown a small own part.
  // An honest C++ epilogue after PyTorch's GEMM measured 1.2-9% of the samples that way, under
  // the 1% floor once in a full test run; on one thread, 14-18%. The audit asks where the work
  // is done, not how fast.
  SerialIntraOp one_thread;
  if (sample) {
    one_thread.on();
    arm_timer(true);
  }
  timed_call(true);
  // Threads the call left behind, watched for 300 ms (only when there are any).
  reply["threads"] = watch_new_threads(before, 300.0);

  // What the first call spent inside own calls, of its CPU time (a measurement, never a verdict:
  // an honest epilogue after a library GEMM spends a share that falls as the GEMM grows).
  const double forward_cpu_ms = cpu_ms;
  reply["own_calls"] = {{"functions", own.names()},
                        {"calls", own.calls().size()},
                        {"forward_cpu_ms", forward_cpu_ms},
                        {"own_cpu_ms", own.own_cpu_ms()}};
  // The sampler watches the own calls alone, replayed on copies of their recorded arguments,
  // when there are any: it asks whether an own function computes or hands its work to library
  // code (a forwarding wrapper), which the library work the forward does outside own calls
  // (a GEMM kept from PyTorch) must not dilute. Without own calls to replay (no pybind11
  // function of the extension folder was called), it samples the whole forward.
  bool replay = sample && !own.calls().empty();
  std::string replay_error;
  if (replay) {
    g_count.store(0);
    cpu_ms = 0;
    calls = 0;
  }
  auto replay_round = [&]() {
    double c0 = 0;
    own.replay([&](bool on) {
      if (on) {
        c0 = process_cpu_ms();
        g_active.store(true, std::memory_order_relaxed);
      } else {
        g_active.store(false, std::memory_order_relaxed);
        cpu_ms += process_cpu_ms() - c0;
      }
    });
    ++calls;
    if (disturbed.empty()) disturbed = sampler_disturbance();
  };
  auto sampled_call = [&]() {
    if (replay) {
      try {
        replay_round();
        return;
      } catch (const std::exception& e) {
        g_active.store(false, std::memory_order_relaxed);
        // A replay that raises (an own function that needs the forward's state) leaves the
        // sampler to the whole forward, from scratch.
        replay_error = e.what();
        replay = false;
        g_count.store(0);
        cpu_ms = 0;
        calls = 0;
      }
    }
    timed_call(false);
  };

  if (sample) {
    sample_until_measured(sampled_call, calls, cpu_ms);
    arm_timer(false);
    size_t n = std::min<size_t>(g_count.load(), kMaxSamples);
    reply["compute"] = {{"method", "cpu-sampling"},
                        {"calls", calls},
                        {"cpu_ms", cpu_ms},
                        {"period_ms", kPeriodUs / 1000.0},
                        {"fired", g_count.load()},
                        {"samples", resolve(0, n)},
                        {"scope", replay ? "own_calls" : "forward"}};
    reply["compute"]["forward_cpu_ms"] = forward_cpu_ms;
    reply["compute"]["own_call_cpu_ms"] = own.own_cpu_ms();
    if (!replay_error.empty()) reply["compute"]["replay_error"] = replay_error;
    if (!disturbed.empty()) reply["compute"]["disturbed"] = disturbed;
  } else {
    reply["compute"] = {{"method", "not_measured"}, {"reason", why_not}};
  }
  return reply;
}

json CandidateAudit::ablation(const ForwardFn& forward, const Tolerance& tolerance,
                              const std::vector<at::Tensor>& genuine) {
  OwnFunctions own(own_dir());
  if (own.empty())
    return {{"ran", false},
            {"reason", "no pybind11 function of a module loaded from the extension folder was found"}};
  json j = {{"ran", true}, {"functions", own.names()}};
  try {
    std::vector<py::object> copies = fresh_copies(pristine_);
    std::vector<at::Tensor> outs;
    own.poison();
    try {
      outs = forward(copies);
    } catch (const WorkerError& e) {
      j["raised"] = e.message.substr(0, 300);
    } catch (const std::exception& e) {
      j["raised"] = std::string(e.what()).substr(0, 300);
    }
    // Copies before off(): off() puts back the genuine values of the arguments the own calls wrote,
    // and an output may be one of them (a kept buffer an own kernel writes into and returns).
    for (auto& o : outs) o = o.clone();
    j.update(own.poisoned());
    own.off();
    if (!j.contains("raised")) {
      json per = json::array();
      if (outs.size() != genuine.size())
        j["outputs_note"] = fmt::format("{} output(s) under poisoning, {} without", outs.size(), genuine.size());
      for (size_t i = 0; i < outs.size() && i < genuine.size(); ++i) {
        Comparison c = compare_tensors(genuine[i], outs[i], tolerance);
        const bool same_shape = genuine[i].sizes() == outs[i].sizes() && genuine[i].scalar_type() == outs[i].scalar_type();
        per.push_back({{"output", i},
                       {"numel", genuine[i].numel()},
                       {"changed", same_shape ? c.mismatches : genuine[i].numel()}});
      }
      j["outputs"] = per;
    }
  } catch (const std::exception& e) {
    own.off();
    j = {{"ran", false}, {"reason", std::string("the ablation call failed: ") + e.what()}};
  }
  return j;
}

json CandidateAudit::second(const std::vector<py::object>& args, const ForwardFn& forward, const std::string& device,
                            const Tolerance& tolerance, TransferSet& transfers) {
  (void)device;
  json reply = {{"ok", true}};
  if (pristine_.size() != args.size())
    throw std::runtime_error("audit: the second draw has a different number of arguments than the first");
  // Fresh buffers for A, after filling free memory with NaN.
  first_args_.clear();  // only the first phase needed them alive
  at::Tensor fence;
  {
    std::vector<at::Tensor> like = first_outputs_;
    std::vector<int> unused;
    tensors_of(pristine_, like, unused);
    fence = poison_free_memory(like);
  }
  std::vector<py::object> fresh = fresh_copies(pristine_);
  std::vector<at::Tensor> second_outputs;
  {
    // On the CPU, every block torch allocates during the repeat is NaN-filled as well: glibc may
    // hand back fresh (zero) pages rather than the blocks just poisoned.
    struct JunkFill {
      bool saved = FLAGS_caffe2_cpu_allocator_do_junk_fill;
      JunkFill() { FLAGS_caffe2_cpu_allocator_do_junk_fill = true; }
      ~JunkFill() { FLAGS_caffe2_cpu_allocator_do_junk_fill = saved; }
    } junk;
    for (const auto& o : forward(fresh)) second_outputs.push_back(o.detach().clone());
  }
  fence.reset();
  json determinism = json::array();
  if (second_outputs.size() != first_outputs_.size()) {
    reply["determinism_note"] = fmt::format("the repeat returned {} output(s), the first call {}",
                                            second_outputs.size(), first_outputs_.size());
  } else {
    for (size_t i = 0; i < second_outputs.size(); ++i) {
      Comparison c = compare_tensors(first_outputs_[i], second_outputs[i], tolerance);
      json j = c.to_json();
      j["output"] = i;
      determinism.push_back(j);
    }
  }
  reply["determinism"] = determinism;

  // The same buffers, overwritten in place with B's values, called once more.
  bool same_shapes = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_tensor(args[i]) != is_tensor(fresh[i])) same_shapes = false;
    if (!is_tensor(args[i])) continue;
    at::Tensor dst = THPVariable_Unpack(fresh[i].ptr());
    at::Tensor src = THPVariable_Unpack(args[i].ptr());
    if (dst.sizes() != src.sizes() || dst.scalar_type() != src.scalar_type()) same_shapes = false;
  }
  if (!same_shapes) {
    reply["stale_skipped"] = "the problem's two draws differ in shapes or dtypes; same storage with new values is untested";
    reply["outputs"] = nullptr;
  } else {
    std::vector<py::object> call_args;
    for (size_t i = 0; i < args.size(); ++i) {
      if (is_tensor(args[i])) {
        // Through an alias over the same memory: the tensor's own version counter stays as it
        // was, so a cache keyed on (identity, version) cannot tell the values changed.
        at::Tensor dst = THPVariable_Unpack(fresh[i].ptr());
        if (dst.numel() > 0) {
          at::Tensor alias = at::from_blob(dst.data_ptr(), dst.sizes(), dst.strides(), dst.options());
          alias.copy_(THPVariable_Unpack(args[i].ptr()));
        }
        call_args.push_back(fresh[i]);
      } else {
        call_args.push_back(args[i]);
      }
    }
    std::vector<at::Tensor> third = forward(call_args);
    json same = json::array();
    json handles = json::array();
    for (size_t i = 0; i < third.size(); ++i) {
      if (i < second_outputs.size())
        same.push_back({{"output", i}, {"equal", same_values(second_outputs[i], third[i])}});
      handles.push_back(transfers.export_tensor(third[i]));
    }
    reply["same_as_previous"] = same;
    reply["outputs"] = handles;
  }
  // Ablation (issue 29), last, so that no cache it fills can serve the same-storage call above:
  // A once more in fresh buffers, with every tensor the own functions return or write replaced by
  // wrong values (worker/own_calls.h). Its outputs against the repeat's say whether anything own
  // code computed reaches the output. The previous call was on B, so an own kernel that writes
  // into a buffer it keeps writes new values there, which the poisoning sees as written.
  reply["ablation"] = ablation(forward, tolerance, second_outputs);
  pristine_.clear();
  first_args_.clear();
  first_outputs_.clear();
  return reply;
}

}  // namespace kbv
