// Worker-side memory measurement (memory.h, docs/MEMORY.md).
#include "worker/memory.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#ifdef KBV_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime.h>
#endif

#include "measure/compute.h"
#include "measure/memory.h"
#include "worker/cupti.h"

namespace kbv::worker_memory {
using nlohmann::json;

namespace {

// Process-wide: the ledger of device allocations since begin_ledger() and torch's segment events.
struct Ledger {
  std::mutex mu;
  bool started = false;
  std::string cupti_error;  // why CUPTI memory activity is not recorded ("" when it is)
  std::vector<memory::DeviceEvent> device;
  std::vector<memory::TorchEvent> torch;
  bool record_blocks = false;  // block events only inside measurement windows
  bool tracker_attached = false;
};

Ledger& ledger() {
  static Ledger* l = new Ledger();
  return *l;
}

// Paths compared as the file system resolves them (a relative TORCH_EXTENSIONS_DIR, symlinks).
std::string canonical(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

void absorb(cupti::Records& records, Ledger& l) {
  for (auto& m : records.memory)
    l.device.push_back({m.time_ns, m.alloc, m.address, m.bytes, std::move(m.source)});
}

// VmRSS and VmHWM of this process in bytes, from /proc/self/status. Plain read(2) and a
// hand parser: the worker's iostream number extraction (std::istream >> long) crashed every CPU
// memory measurement on the GPU machine, in the libstdc++ code linked into this module.
bool read_rss(int64_t& rss, int64_t& hwm, std::string& error) {
  rss = hwm = -1;
  int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot read /proc/self/status: ") + std::strerror(errno);
    return false;
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!memory::parse_status_rss(text, rss, hwm)) {
    error = "/proc/self/status has no readable VmRSS/VmHWM";
    return false;
  }
  return true;
}

// Resets VmHWM to the current RSS ("5" > /proc/self/clear_refs, Linux >= 4.0).
bool reset_hwm(std::string& error) {
  int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  ssize_t n = -1;
  if (fd >= 0) {
    do n = ::write(fd, "5", 1);
    while (n < 0 && errno == EINTR);
    ::close(fd);
  }
  if (n != 1) {
    error = "cannot write /proc/self/clear_refs (needed to reset the peak RSS before each call)";
    return false;
  }
  return true;
}

json measure_cpu(const std::function<void()>& call, const MeasureOptions& o) {
  std::vector<memory::RssCall> calls;
  std::string error;
  for (int i = 0; i < o.repeats; ++i) {
    malloc_trim(0);  // freed heap goes back to the OS, so the call's growth shows in its RSS
    memory::RssCall c;
    int64_t hwm = 0;
    if (!reset_hwm(error) || !read_rss(c.rss_before, hwm, error))
      return json{{"memory", {{"measured", false}, {"method", "rss"}, {"reason", error}}}};
    call();
    int64_t rss = 0;
    if (!read_rss(rss, c.hwm_after, error))
      return json{{"memory", {{"measured", false}, {"method", "rss"}, {"reason", error}}}};
    malloc_trim(0);
    if (!read_rss(c.rss_after, hwm, error))
      return json{{"memory", {{"measured", false}, {"method", "rss"}, {"reason", error}}}};
    calls.push_back(c);
  }
  json side = memory::rss_side_json(calls);
  side["measured"] = true;
  side["method"] = "rss";
  json reply = {{"memory", side}};
  if (o.kernels)
    reply["compute"] = {{"method", "not_measured"},
                        {"reason", "kernel attribution needs CUPTI on a GPU; the CPU audit fills compute on CPU runs"}};
  return reply;
}

#ifdef KBV_WITH_CUDA
using c10::CachingAllocator::StatType;

const c10::CachingAllocator::Stat& allocated_stat(const c10::CachingDeviceAllocator::DeviceStats& s) {
  return s.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)];
}

void sync_or_throw() {
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA error while measuring memory: {}", cudaGetErrorString(err)));
}

// Attaches torch's allocator trace tracker (once; the allocator exists by now: the inputs are on
// the device) and reports the segments it already holds as if allocated now, so that the device
// allocations behind them are matched as torch's. Never called with l.mu held: the tracker runs
// under the allocator's lock and takes l.mu.
void ensure_tracker(Ledger& l) {
  if (l.tracker_attached) return;
  l.tracker_attached = true;
  c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker([](const c10::CachingDeviceAllocator::TraceEntry& e) {
    using A = c10::CachingDeviceAllocator::TraceEntry::Action;
    memory::TorchEvent t;
    switch (e.action_) {
      case A::ALLOC: t.action = memory::TorchEvent::Action::block_alloc; break;
      case A::FREE_REQUESTED: t.action = memory::TorchEvent::Action::block_free; break;
      case A::SEGMENT_ALLOC: t.action = memory::TorchEvent::Action::segment_alloc; break;
      case A::SEGMENT_FREE: t.action = memory::TorchEvent::Action::segment_free; break;
      default: return;
    }
    t.time_ns = cupti::now_ns();
    t.address = e.addr_;
    t.bytes = e.size_;
    Ledger& lg = ledger();
    std::lock_guard<std::mutex> guard(lg.mu);
    bool block = t.action == memory::TorchEvent::Action::block_alloc || t.action == memory::TorchEvent::Action::block_free;
    if (block && !lg.record_blocks) return;
    lg.torch.push_back(t);
  });
  c10::cuda::CUDACachingAllocator::SnapshotInfo snap = c10::cuda::CUDACachingAllocator::snapshot({0, 0}, false);
  uint64_t now = cupti::now_ns();
  std::lock_guard<std::mutex> lock(l.mu);
  for (const auto& seg : snap.segments)
    if (seg.device == 0)
      l.torch.push_back({now, memory::TorchEvent::Action::segment_alloc, static_cast<uint64_t>(seg.address),
                         static_cast<uint64_t>(seg.total_size)});
}

json measure_cuda(const std::function<void()>& call, const MeasureOptions& o) {
  Ledger& l = ledger();
  if (l.started && l.cupti_error.empty()) ensure_tracker(l);
  const bool have_cupti = l.cupti_error.empty() && l.started;
  std::string kernel_error;
  std::vector<memory::CallWindow> windows;
  uint64_t dropped_before = cupti::dropped();
  std::vector<cupti::KernelRecord> kernels;
  uint64_t k_start = 0, k_end = 0;
  sync_or_throw();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    l.record_blocks = true;
  }
  for (int i = 0; i < o.repeats; ++i) {
    memory::CallWindow w;
    w.torch_before = allocated_stat(c10::cuda::CUDACachingAllocator::getDeviceStats(0)).current;
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
    bool audit = o.kernels && i == 0 && have_cupti;
    if (audit) {
      kernel_error = cupti::enable(cupti::kKernels);
      audit = kernel_error.empty();
    }
    w.start_ns = cupti::now_ns();
    try {
      call();
    } catch (...) {
      if (audit) cupti::disable(cupti::kKernels);
      std::lock_guard<std::mutex> lock(l.mu);
      l.record_blocks = false;
      throw;
    }
    sync_or_throw();
    w.end_ns = cupti::now_ns();
    if (audit) {
      cupti::disable(cupti::kKernels);
      k_start = w.start_ns;
      k_end = w.end_ns;
    }
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
    w.torch_peak = allocated_stat(stats).peak;
    w.torch_after = allocated_stat(stats).current;
    windows.push_back(w);
  }
  cupti::Records records = cupti::take();
  std::vector<memory::DeviceEvent> device;
  std::vector<memory::TorchEvent> torch;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    l.record_blocks = false;
    absorb(records, l);
    device = l.device;
    torch = l.torch;
    // Block events are only needed for this window.
    std::erase_if(l.torch, [](const memory::TorchEvent& e) {
      return e.action == memory::TorchEvent::Action::block_alloc || e.action == memory::TorchEvent::Action::block_free;
    });
  }
  for (auto& k : records.kernels)
    if (k.start_ns >= k_start && k.start_ns <= k_end) kernels.push_back(std::move(k));

  json side;
  if (have_cupti) {
    memory::Account a = memory::account(device, torch, windows, o.input_bytes);
    side = memory::side_json(a);
    side["measured"] = true;
    side["method"] = "cupti-memory+torch-allocator";
    if (a.largest_non_torch_bytes > 0)
      side["largest_non_torch"] = {{"bytes", a.largest_non_torch_bytes}, {"source", a.largest_non_torch_source}};
    uint64_t dropped = cupti::dropped() - dropped_before;
    if (dropped > 0) {
      side["exact"] = false;
      side["dropped_records"] = dropped;
    }
  } else {
    // Torch's view alone: what KernelBench-Verified measures; memory outside torch unseen.
    memory::Account a = memory::account({}, {}, windows, o.input_bytes);
    side = memory::side_json(a);
    side.erase("non_torch_peak_bytes");
    side["measured"] = true;
    side["method"] = "torch-allocator";
    side["non_torch_reason"] = l.cupti_error.empty() ? "the CUPTI ledger was not started" : l.cupti_error;
    side["exact"] = false;
  }
  json reply = {{"memory", side}};
  if (o.kernels) {
    if (!have_cupti || !kernel_error.empty()) {
      reply["compute"] = {{"method", "not_measured"},
                          {"reason", !kernel_error.empty() ? kernel_error : side["non_torch_reason"].get<std::string>()}};
    } else {
      std::vector<std::string> roots;
      for (const auto& r : o.own_roots) roots.push_back(canonical(r));
      std::map<std::string, std::string> resolved;
      std::vector<compute::KernelRun> runs;
      auto own = [&](const std::string& object) {
        return compute::classify_launcher(canonical(object), roots) == compute::Origin::own;
      };
      // Launches neither the stub nor the stack placed (CUDA 13 passes kernel handles): the own
      // object whose stub of that name has that handle, if any.
      std::map<std::pair<std::string, uint64_t>, std::string> by_handle;
      for (auto& k : kernels) {
        if (!k.launcher.empty() || k.function == 0) continue;
        auto key = std::make_pair(k.name, k.function);
        auto h = by_handle.find(key);
        if (h == by_handle.end()) h = by_handle.emplace(key, cupti::object_of_kernel(k.name, k.function, own)).first;
        k.launcher = h->second;
      }
      for (const auto& k : kernels) {
        auto it = resolved.find(k.launcher);
        if (it == resolved.end()) it = resolved.emplace(k.launcher, canonical(k.launcher)).first;
        runs.push_back({k.name, k.start_ns, k.end_ns, compute::classify_launcher(it->second, roots)});
      }
      reply["compute"] = compute::compute_json(runs, "cupti");
    }
  }
  return reply;
}
#endif

}  // namespace

void begin_ledger(const std::string& device) {
#ifdef KBV_WITH_CUDA
  if (device != "cuda") return;
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.started) return;
  l.started = true;
  if (const char* off = std::getenv("KBV_NO_CUPTI"); off && *off && std::string(off) != "0") {
    l.cupti_error = "KBV_NO_CUPTI is set: CUPTI is not used in this worker";
    return;
  }
  l.cupti_error = cupti::enable(cupti::kMemory);
#else
  (void)device;
#endif
}

int64_t torch_allocated(const std::string& device) {
#ifdef KBV_WITH_CUDA
  if (device == "cuda") return allocated_stat(c10::cuda::CUDACachingAllocator::getDeviceStats(0)).current;
#endif
  (void)device;
  return 0;
}

std::vector<std::string> own_roots_from_environment() {
  std::vector<std::string> roots;
  if (const char* v = std::getenv("TORCH_EXTENSIONS_DIR"); v && *v) roots.push_back(v);
  if (const char* v = std::getenv("TRITON_CACHE_DIR"); v && *v)
    roots.push_back(v);
  else if (const char* home = std::getenv("HOME"); home && *home)
    roots.push_back(std::string(home) + "/.triton/cache");
  return roots;
}

json measure(const std::function<void()>& call, const MeasureOptions& o) {
  MeasureOptions opts = o;
  if (opts.repeats < 2) opts.repeats = 2;
#ifdef KBV_WITH_CUDA
  if (opts.device == "cuda") return measure_cuda(call, opts);
#endif
  return measure_cpu(call, opts);
}

}  // namespace kbv::worker_memory
