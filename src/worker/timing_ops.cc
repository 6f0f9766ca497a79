#include "worker/timing_ops.h"

#include <map>

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "check/precision.h"
#include "proto/channel.h"
#include "util/sched.h"
#include "worker/candidate.h"
#include "worker/python.h"
#include "worker/reference.h"

namespace py = pybind11;
using nlohmann::json;

namespace kbv {

void TimingInputs::clear() {
  sets = LiveInputs{};
  staging.clear();
  expected.clear();
  arg_template.clear();
  tensor_pos.clear();
  transfers.clear();
}

namespace {

msg::Done release_timing(TimingInputs& t, const std::string& device) {
  t.clear();
  release_cached_memory(device);
  return msg::Done{};
}

// The timing loop on `fn` over the inputs loaded in `t`: before call i, `prepare(i)` puts its
// values into the live buffers (a fresh draw), or, without it, input set i mod K is loaded.
// `mark(index, "start"|"end")`, when given, around every call's interval (TimingConfig::on_start).
msg::TimeReply time_callable(const Hosted& h, TimingInputs& t, py::object fn, const msg::TimingSettings& settings,
                             const std::function<void(int)>& prepare, SpotSampler* spot, const char* context,
                             const std::function<void(int, const char*)>& mark = nullptr) {
  t.sets.init();
  std::vector<py::object> args = t.arg_template;
  for (size_t i = 0; i < t.tensor_pos.size(); ++i) args[t.tensor_pos[i]] = wrap(t.sets.live[i]);
  py::tuple call_args = py::tuple(py::cast(args));
  TimingConfig config;
  config.cuda = h.device == "cuda";
  config.flush_bytes = settings.flush_bytes;
  config.launch_hold_us = settings.launch_hold_us;
  config.rule = settings.rule;
  config.flush = settings.l2_flush;
  config.events_sample = settings.upstream_loop;
  // CPU thread parity: the supervisor pinned this process to the budget's CPUs; ATen's intra-op
  // pool runs as many threads (docs/TIMING.md "Thread parity").
  if (!config.cuda && settings.threads > 0 && at::get_num_threads() != settings.threads)
    at::set_num_threads(settings.threads);
  if (mark) {
    config.on_start = [&mark](int index) { mark(index, "start"); };
    config.on_end = [&mark](int index) { mark(index, "end"); };
  }
  py::object last;
  TimingRun run = run_timing(
      config,
      [&](int index) {
        if (prepare)
          prepare(index);
        else if (!settings.upstream_loop)  // upstream's reloads nothing: the buffers as the last call left them
          t.sets.load(index);
      },
      [&]() {
        try {
          at::NoGradGuard no_grad;
          last = fn(*call_args);
        } catch (py::error_already_set& e) {
          throw python_error("runtime_error", context, e);
        }
      },
      [&](int sample, int index) {
        if (spot) spot->take(sample, index, flatten_outputs(last).tensors);
        last = py::none();
      });
  msg::TimeReply reply = run.to_reply();
  reply.warmup = config.rule.warmup;
  if (!config.cuda) {
    reply.threads = at::get_num_threads();
    reply.cpus = cpu_list_text(affinity_of(0));
  }
  if (prepare)
    reply.inputs = "fresh";
  else
    reply.sets = t.sets.sets.size();
  return reply;
}

// One ask to the supervisor on the reply channel (a draw, or a call's start or end mark), and its answer.
void ask_supervisor(int in_fd, int out_fd, const msg::DrawAsk& ask) {
  const std::string what = ask.mark.empty() ? "a fresh timing draw" : "the " + ask.mark + " mark of a timed call";
  if (std::string e = write_message(out_fd, msg::to_json(ask)); !e.empty())
    throw WorkerError{"protocol_error", "asking for " + what + ": " + e, ""};
  ReadResult r = read_message(in_fd, std::nullopt);
  if (r.status != ReadResult::Status::ok)
    throw WorkerError{"protocol_error", "waiting for " + what + ": " + r.error, ""};
  if (!msg::reply_ok(r.message)) {
    msg::Failure f = msg::failure_of(r.message);
    throw WorkerError{f.kind, f.message.empty() ? what + " failed" : f.message, ""};
  }
}

// ---- reference ----

// Tensor arguments of fresh timing draw `seed` as a timed call sees them: the problem's
// get_inputs() after manual_seed(seed) (on the GPU inside a torch.device("cuda") context),
// floating tensors in the evaluated precision. The same code makes the candidate's draws
// (time_draw), the baselines' and the spot checks' recomputations.
std::vector<at::Tensor> fresh_draw(ReferenceState& s, uint64_t seed) {
  py::list raw;
  try {
    raw = draw_inputs(s, seed, s.h.device == "cuda");
  } catch (py::error_already_set& e) {
    throw python_error("problem_error", "get_inputs() failed while drawing fresh timing inputs", e);
  }
  std::vector<at::Tensor> out;
  for (auto item : raw) {
    if (!THPVariable_Check(item.ptr())) continue;
    at::Tensor t = THPVariable_Unpack(item.ptr()).to(s.h.torch_device());
    if (s.h.precision != "fp32") t = cast_floating(t, s.h.dtype);
    out.push_back(t);
  }
  return out;
}

// `into` filled with fresh draw `seed` of the problem's get_inputs(); a draw whose tensors
// differ in number, shape or dtype from the first cannot go through the same buffers.
void load_fresh(ReferenceState& s, std::vector<at::Tensor>& into, uint64_t seed) {
  std::vector<at::Tensor> t = fresh_draw(s, seed);
  if (t.size() != into.size())
    throw WorkerError{"problem_error",
                      fmt::format("get_inputs() returned {} tensors on a fresh timing draw, {} on the first; a "
                                  "problem whose inputs change between draws can only be timed with "
                                  "--timing-inputs sets",
                                  t.size(), into.size()),
                      ""};
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].sizes() != into[i].sizes() || t[i].scalar_type() != into[i].scalar_type())
      throw WorkerError{"problem_error",
                        fmt::format("get_inputs() returned input {} as {} {} on a fresh timing draw, {} {} on the "
                                    "first; a problem whose inputs change between draws can only be timed with "
                                    "--timing-inputs sets",
                                    i, dtype_name(t[i].scalar_type()), shape_string(t[i].sizes()),
                                    dtype_name(into[i].scalar_type()), shape_string(into[i].sizes())),
                        ""};
    into[i].copy_(t[i]);
  }
}

// K input sets from secret seeds (fewer when K would exceed max_bytes, never fewer than 2), their
// strict-FP32 expected outputs kept here, the sets exported for the candidate.
msg::TimeInputsReply time_inputs(ReferenceState& s, const msg::TimeInputsRequest& request) {
  release_trial(s);
  TimingInputs& t = s.timing;
  release_timing(t, s.h.device);
  const bool on_device = draws_on_device(s, request.input_draw);
  msg::TimeInputsReply reply;
  for (size_t k = 0; k < request.seeds.size(); ++k) {
    py::list raw;
    try {
      raw = draw_inputs(s, request.seeds[k], on_device);
    } catch (py::error_already_set& e) {
      throw python_error("problem_error", "get_inputs() failed while drawing timing inputs", e);
    }
    // Bytes as the call sees them: floating inputs in the evaluated precision.
    uint64_t bytes = 0;
    for (auto item : raw) {
      if (!THPVariable_Check(item.ptr())) continue;
      const at::Tensor& x = THPVariable_Unpack(item.ptr());
      bytes += s.h.precision != "fp32" && at::isFloatingType(x.scalar_type())
                   ? static_cast<uint64_t>(x.numel()) * c10::elementSize(s.h.dtype)
                   : x.nbytes();
    }
    if (k >= 2 && (k + 1) * bytes > request.max_bytes) break;
    std::vector<at::Tensor> tensors;
    std::vector<py::object> args;
    json wire = json::array();
    for (size_t i = 0; i < raw.size(); ++i) {
      py::object item = raw[i];
      if (THPVariable_Check(item.ptr())) {
        at::Tensor x = THPVariable_Unpack(item.ptr()).to(s.h.torch_device());
        if (s.h.precision != "fp32") x = cast_floating(x, s.h.dtype);  // as the correctness inputs
        at::Tensor view;
        wire.push_back(t.transfers.export_tensor(x, k == 0 ? &view : nullptr));
        if (k == 0) t.staging.push_back(view);
        tensors.push_back(x);
        // The reference computes on a copy: an in-place reference must not change the set.
        args.push_back(wrap(x.clone()));
        if (k == 0) t.tensor_pos.push_back(static_cast<int>(i));
      } else {
        wire.push_back(to_wire(item, t.transfers, "get_inputs()"));
        args.push_back(item);
      }
      if (k == 0) t.arg_template.push_back(item);
    }
    double seconds = 0;
    std::vector<at::Tensor> expected_set =
        reference_outputs(s, args, "the reference Model's forward failed on timing inputs", seconds);
    if (k == 0) {
      reply.input_bytes = bytes;
      for (auto& x : expected_set) reply.output_bytes += x.nbytes();
    }
    t.expected.push_back(std::move(expected_set));
    t.sets.sets.push_back(std::move(tensors));
    reply.sets.push_back(wire);
  }
  return reply;
}

// A baseline: the problem's Model timed as "fp32", "tf32" or "compile" (inductor's default mode
// on the TF32 settings of the realistic baseline); with fresh_seed, call i on draw fresh_seed + i.
msg::TimeReply time_reference(ReferenceState& s, const msg::TimeReferenceRequest& request) {
  const std::string& mode = request.mode;
  if (mode != "fp32" && mode != "tf32" && mode != "compile")
    throw WorkerError{"protocol_error", "unknown baseline mode '" + mode + "' (fp32, tf32, compile)", ""};
  if (s.timing.sets.sets.empty()) throw WorkerError{"protocol_error", "time before time_inputs", ""};
  if (s.meta_model)
    throw WorkerError{"protocol_error", "the problem was loaded for its shapes only (a meta-device Model): nothing times it",
                      ""};
  const MatmulPrecisionScope matmul(mode == "fp32" ? "fp32" : "tf32");
  py::object fn = s.h.model;
  if (mode == "compile") {
    try {
      fn = py::module_::import("torch").attr("compile")(s.h.model);
    } catch (py::error_already_set& e) {
      throw python_error("runtime_error", "torch.compile(Model) failed", e);
    }
  }
  // With marks, every call is preceded and followed by the same round trips to the supervisor
  // as the candidate's (its draw asked for, its start and end marked): a CPU thread that blocked
  // pays for it on its next call (docs/TIMING.md "Symmetric marks"), so both sides block alike.
  std::function<void(int)> prepare;
  if (request.fresh_seed)
    prepare = [&s, seed = *request.fresh_seed, marks = request.marks](int index) {
      if (marks) ask_supervisor(s.in_fd, s.out_fd, msg::DrawAsk{index, ""});
      load_fresh(s, s.timing.sets.live, seed + static_cast<uint64_t>(index));
    };
  std::function<void(int, const char*)> mark;
  if (request.marks)
    mark = [&s](int index, const char* which) { ask_supervisor(s.in_fd, s.out_fd, msg::DrawAsk{index, which}); };
  msg::TimeReply reply = time_callable(s.h, s.timing, fn, request.timing, prepare, nullptr,
                                       "the reference Model's forward raised during timing", mark);
  reply.mode = mode;
  return reply;
}

// Fresh draw fresh_seed + index written into the shared set-0 buffers, finished on the device
// before the reply, for the candidate to copy into its live buffers.
msg::Done time_draw(ReferenceState& s, const msg::TimeDrawRequest& request) {
  if (s.timing.sets.sets.empty()) throw WorkerError{"protocol_error", "time_draw before time_inputs", ""};
  // The candidate's next timed call follows at once: no pool of ours may still spin then.
  SerialIntraOp serial;
  serial.on();
  // Drawn into memory of ours, then written through the shared files: a candidate that truncated
  // one makes it grow back, where a store into the mapping would be SIGBUS in the reference.
  std::vector<at::Tensor> drawn;
  for (const auto& view : s.timing.staging) drawn.push_back(at::empty_like(view));
  load_fresh(s, drawn, request.fresh_seed + request.index);
  for (size_t i = 0; i < drawn.size(); ++i) s.timing.transfers.write_export(s.timing.staging[i], drawn[i]);
  sync_device(s.h.device);
  return msg::Done{};
}

// The candidate's spot entries against the reference's outputs of the calls they name: input set
// index mod K, or, with fresh_seed, the reference's own recomputation of each named draw (the
// supervisor sends a secret subset of the calls), one draw at a time.
msg::SpotCheckReply spot_check(ReferenceState& s, const msg::SpotCheckRequest& request) {
  const json& entries = request.entries;
  if (!entries.is_array()) throw WorkerError{"protocol_error", "spot_check: 'entries' is not a list", ""};
  TimingInputs& t = s.timing;
  msg::SpotCheckReply reply;
  auto add = [&](const SpotResult& part) {
    reply.checked += part.checked;
    reply.failed += part.failed;
    if (reply.first_failure.empty()) reply.first_failure = part.first_failure;
  };
  if (request.fresh_seed) {
    std::map<int64_t, json> by_draw;  // entries naming no valid draw go under -1 (no outputs)
    for (const auto& e : entries) {
      int64_t index = e.is_object() && e.contains("set") && e["set"].is_number_integer() ? e["set"].get<int64_t>() : -1;
      by_draw[index < 0 ? -1 : index].push_back(e);
    }
    for (auto& [index, group] : by_draw) {
      std::vector<at::Tensor> outputs;
      if (index >= 0) {
        std::vector<at::Tensor> drawn = fresh_draw(s, *request.fresh_seed + static_cast<uint64_t>(index));
        if (drawn.size() != t.tensor_pos.size())
          throw WorkerError{"problem_error", "get_inputs() returned another number of tensors on a fresh draw", ""};
        std::vector<py::object> args = t.arg_template;
        for (size_t i = 0; i < drawn.size(); ++i) args[t.tensor_pos[i]] = wrap(drawn[i]);
        double seconds = 0;
        outputs = reference_outputs(s, args, "the reference Model's forward failed on a timing draw", seconds);
      }
      add(spot_compare(
          group, [&](int64_t i) { return i == index && index >= 0 ? &outputs : nullptr; }, request.atol,
          request.rtol));
    }
  } else {
    add(spot_compare(
        entries,
        [&](int64_t index) -> const std::vector<at::Tensor>* {
          if (index < 0 || t.expected.empty()) return nullptr;
          return &t.expected[static_cast<size_t>(index) % t.expected.size()];
        },
        request.atol, request.rtol));
  }
  for (const auto& set : t.expected)
    for (const auto& x : set) reply.expected_numel += x.numel();
  return reply;
}

// Copy bandwidth and FP32/TF32 matmul rates of this device (the physical floor, docs/TIMING.md).
msg::CalibrateReply calibrate(const Hosted& h, const msg::CalibrateRequest& request) {
  const bool cuda = h.device == "cuda";
  Bandwidth bw = calibrate_bandwidth(cuda);
  msg::CalibrateReply reply;
  reply.bandwidth_bytes_per_s = bw.bytes_per_s;
  reply.buffer_bytes = bw.buffer_bytes;
  reply.copies = bw.copies;
  reply.method = bw.method;
  const int64_t n = request.matmul_n.value_or(cuda ? 8192 : 512);
  at::Tensor a = at::rand({n, n}, at::TensorOptions().device(h.torch_device()));
  at::Tensor b = at::rand({n, n}, at::TensorOptions().device(h.torch_device()));
  TimingConfig config;
  config.cuda = cuda;
  config.rule.time_cap_s = 0.5;
  config.flush_bytes = 1;
  for (const char* mode : {"fp32", "tf32"}) {
    set_matmul_precision(mode);
    TimingRun run = run_timing(config, [](int) {}, [&]() { (void)at::mm(a, b); }, [](int, int) {});
    Stats st = summarize(run.kept_ms);
    const double rate = st.median_ms > 0 ? 2.0 * static_cast<double>(n) * n * n / (st.median_ms / 1000.0) : 0.0;
    (std::string(mode) == "fp32" ? reply.matmul_fp32_flops_per_s : reply.matmul_tf32_flops_per_s) = rate;
  }
  set_matmul_precision("fp32");
  reply.matmul_n = n;
  return reply;
}

// ---- candidate ----

// One fresh draw, made by the reference through the supervisor (call `index` of this request; the
// supervisor checks the order), then copied byte for byte into the live buffers. No Python runs in
// this process for it, so nothing the candidate patched sees the draw.
void fetch_fresh(CandidateState& s, int index) {
  ask_supervisor(s.in_fd, s.out_fd, msg::DrawAsk{index, ""});
  TimingInputs& t = s.timing;
  const auto& staged = t.sets.sets.at(0);
  for (size_t i = 0; i < t.sets.live.size() && i < staged.size(); ++i) copy_bytes(t.sets.live[i], staged[i]);
}

// The candidate's timed calls on the sets the reference exported (or on fresh draws it serves).
msg::TimeReply time_candidate(CandidateState& s, const msg::TimeCandidateRequest& request) {
  release_trial(s);
  TimingInputs& t = s.timing;
  release_timing(t, s.h.device);
  if (!request.sets.is_array()) throw WorkerError{"protocol_error", "time: 'sets' is not a list", ""};
  for (size_t k = 0; k < request.sets.size(); ++k) {
    const json& set = request.sets[k];
    if (!set.is_array()) throw WorkerError{"protocol_error", "time: an input set is not a list", ""};
    std::vector<at::Tensor> tensors;
    for (size_t i = 0; i < set.size(); ++i) {
      const json& a = set[i];
      if (a.is_object() && a.value("kind", "") == "tensor") {
        // The reference's files, which a candidate sharing the folder could have replaced: the
        // exporter's own only (the baselines' twin reads them after the candidate's blocks).
        try {
          tensors.push_back(t.transfers.import_tensor(a, true));
        } catch (const ReplacedFile& e) {
          throw WorkerError{msg::kSharedBufferReplaced, e.what(), ""};
        }
        if (k == 0) {
          t.tensor_pos.push_back(static_cast<int>(i));
          t.arg_template.push_back(py::none());
        }
      } else if (k == 0) {
        t.arg_template.push_back(from_wire(a, t.transfers));
      }
    }
    t.sets.sets.push_back(std::move(tensors));
  }
  SpotSampler spot;
  spot.rng.seed(request.spot_seed);
  spot.per_output = request.spot_per_output;
  spot.max_calls = request.spot_max_calls;
  std::function<void(int)> prepare;
  if (request.fresh) prepare = [&s](int index) { fetch_fresh(s, index); };
  std::function<void(int, const char*)> mark;
  if (request.marks)
    mark = [&s](int index, const char* which) { ask_supervisor(s.in_fd, s.out_fd, msg::DrawAsk{index, which}); };
  // The baselines' twin: a baseline mode's precision, as time_reference sets it.
  const std::string& mode = request.baseline_mode;
  if (!mode.empty() && mode != "fp32" && mode != "tf32")
    throw WorkerError{"protocol_error", "unknown baseline mode '" + mode + "' for a twin (fp32, tf32)", ""};
  const MatmulPrecisionScope matmul(mode);
  msg::TimeReply reply = time_callable(s.h, t, s.h.model, request.timing, prepare, &spot,
                                       "ModelNew.forward raised during timing", mark);
  if (!mode.empty()) reply.mode = mode;
  reply.spot = spot.entries;
  return reply;
}

}  // namespace

void add_reference_timing_ops(ReferenceState& s, OpTable& ops) {
  ops[msg::Op::time_inputs] = typed_handler<msg::TimeInputsRequest>([&s](const auto& r) { return time_inputs(s, r); });
  ops[msg::Op::time] = typed_handler<msg::TimeReferenceRequest>([&s](const auto& r) { return time_reference(s, r); });
  ops[msg::Op::time_draw] = typed_handler<msg::TimeDrawRequest>([&s](const auto& r) { return time_draw(s, r); });
  ops[msg::Op::spot_check] = typed_handler<msg::SpotCheckRequest>([&s](const auto& r) { return spot_check(s, r); });
  ops[msg::Op::time_release] =
      typed_handler<msg::TimeReleaseRequest>([&s](const auto&) { return release_timing(s.timing, s.h.device); });
  ops[msg::Op::calibrate] = typed_handler<msg::CalibrateRequest>([&s](const auto& r) { return calibrate(s.h, r); });
}

void add_candidate_timing_ops(CandidateState& s, OpTable& ops) {
  ops[msg::Op::time] = typed_handler<msg::TimeCandidateRequest>([&s](const auto& r) { return time_candidate(s, r); });
  ops[msg::Op::time_release] =
      typed_handler<msg::TimeReleaseRequest>([&s](const auto&) { return release_timing(s.timing, s.h.device); });
}

}  // namespace kbv
