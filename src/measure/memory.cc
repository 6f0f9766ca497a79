// Memory accounting (memory.h, docs/MEMORY.md).
#include "measure/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "record/finding.h"

namespace kbv::memory {
using nlohmann::json;

namespace {

bool by_time(const DeviceEvent& a, const DeviceEvent& b) { return a.time_ns < b.time_ns; }

}  // namespace

std::vector<bool> torch_owned(const std::vector<DeviceEvent>& device, const std::vector<TorchEvent>& torch) {
  std::vector<bool> owned(device.size(), false);
  std::unordered_map<uint64_t, std::vector<size_t>> allocs;  // address -> allocation indexes, by time
  for (size_t i = 0; i < device.size(); ++i)
    if (device[i].alloc) allocs[device[i].address].push_back(i);
  for (const auto& e : torch) {
    if (e.action != TorchEvent::Action::segment_alloc) continue;
    auto it = allocs.find(e.address);
    if (it == allocs.end()) continue;
    const auto& list = it->second;
    // The allocator reports a segment right after its cudaMalloc returned: the latest device
    // allocation at that address no later than the report (else the first one after it).
    auto after = std::upper_bound(list.begin(), list.end(), e.time_ns,
                                  [&](uint64_t t, size_t i) { return t < device[i].time_ns; });
    size_t chosen = after != list.begin() ? *(after - 1) : list.front();
    owned[chosen] = true;
  }
  return owned;
}

Account account(std::vector<DeviceEvent> device, std::vector<TorchEvent> torch, const std::vector<CallWindow>& calls,
                int64_t input_bytes) {
  std::stable_sort(device.begin(), device.end(), by_time);
  std::stable_sort(torch.begin(), torch.end(), [](const TorchEvent& a, const TorchEvent& b) { return a.time_ns < b.time_ns; });
  std::vector<bool> owned = torch_owned(device, torch);
  bool have_blocks = std::any_of(torch.begin(), torch.end(), [](const TorchEvent& e) {
    return e.action == TorchEvent::Action::block_alloc || e.action == TorchEvent::Action::block_free;
  });

  Account a;
  a.exact = have_blocks || calls.empty();
  struct Live {
    uint64_t bytes;
    std::string source;
  };
  std::unordered_map<uint64_t, Live> ledger;  // non-torch allocations alive, by address
  int64_t non_torch_live = 0;
  uint64_t unknown_releases = 0;
  size_t di = 0, ti = 0;
  auto apply_device = [&](size_t i) {
    const DeviceEvent& e = device[i];
    if (e.alloc) {
      if (owned[i]) return;
      auto [it, inserted] = ledger.try_emplace(e.address, Live{e.bytes, e.source});
      if (!inserted) {  // a second allocation at a live address: the first one's release was lost
        non_torch_live -= static_cast<int64_t>(it->second.bytes);
        it->second = Live{e.bytes, e.source};
      }
      non_torch_live += static_cast<int64_t>(e.bytes);
    } else {
      auto it = ledger.find(e.address);
      if (it == ledger.end()) {
        ++unknown_releases;  // torch's own segment, or memory allocated before the ledger began
        return;
      }
      non_torch_live -= static_cast<int64_t>(it->second.bytes);
      ledger.erase(it);
    }
  };
  auto note_largest = [&]() {
    for (const auto& [addr, live] : ledger)
      if (live.bytes > a.largest_non_torch_bytes) {
        a.largest_non_torch_bytes = live.bytes;
        a.largest_non_torch_source = live.source;
      }
  };

  for (const auto& w : calls) {
    // Everything up to the start of the call is the state the call starts from.
    while (di < device.size() && device[di].time_ns <= w.start_ns) apply_device(di++);
    while (ti < torch.size() && torch[ti].time_ns <= w.start_ns) ++ti;
    CallMemory c;
    c.torch_peak = w.torch_peak;
    int64_t torch_live = w.torch_before;
    int64_t non_torch_max = non_torch_live;
    int64_t combined_max = torch_live + non_torch_live;
    if (!ledger.empty()) note_largest();
    // Both streams in time order over (start, end].
    for (;;) {
      bool dev_next = di < device.size() && device[di].time_ns <= w.end_ns;
      bool torch_next = ti < torch.size() && torch[ti].time_ns <= w.end_ns;
      if (!dev_next && !torch_next) break;
      if (dev_next && (!torch_next || device[di].time_ns <= torch[ti].time_ns)) {
        bool grew = device[di].alloc && !owned[di];
        apply_device(di++);
        if (grew) note_largest();
      } else {
        const TorchEvent& e = torch[ti++];
        if (e.action == TorchEvent::Action::block_alloc) torch_live += static_cast<int64_t>(e.bytes);
        if (e.action == TorchEvent::Action::block_free) torch_live -= static_cast<int64_t>(e.bytes);
      }
      non_torch_max = std::max(non_torch_max, non_torch_live);
      combined_max = std::max(combined_max, torch_live + non_torch_live);
    }
    c.non_torch_peak = non_torch_max;
    c.peak = have_blocks ? std::max(w.torch_peak, combined_max) : w.torch_peak + non_torch_max;
    c.non_torch_at_rest = non_torch_live;
    c.at_rest = w.torch_after + non_torch_live;
    a.calls.push_back(c);
  }
  for (const auto& c : a.calls) {
    a.torch_peak = std::max(a.torch_peak, c.torch_peak);
    a.non_torch_peak = std::max(a.non_torch_peak, c.non_torch_peak);
    a.peak = std::max(a.peak, c.peak);
  }
  if (!a.calls.empty()) {
    a.persistent = std::max<int64_t>(0, a.calls.front().at_rest - input_bytes);
    if (a.calls.size() > 1)
      a.growth_per_call = static_cast<double>(a.calls.back().at_rest - a.calls.front().at_rest) /
                          static_cast<double>(a.calls.size() - 1);
  }
  if (!a.exact)
    a.notes.push_back("torch's allocator reported no block events: peak_bytes is torch's peak plus the non-torch peak "
                      "(an upper bound)");
  (void)unknown_releases;
  return a;
}

json side_json(const Account& a) {
  return json{{"torch_peak_bytes", a.torch_peak},
              {"non_torch_peak_bytes", a.non_torch_peak},
              {"peak_bytes", a.peak},
              {"persistent_bytes", a.persistent},
              {"growth_bytes_per_call", a.growth_per_call},
              {"calls", a.calls.size()},
              {"exact", a.exact}};
}

bool parse_status_rss(const std::string& status, int64_t& rss, int64_t& hwm) {
  rss = hwm = -1;
  // The value of a "Key:   123 kB" line in bytes; -1 when malformed.
  auto value = [&](size_t at) -> int64_t {
    size_t i = at;
    while (i < status.size() && (status[i] == ' ' || status[i] == '\t')) ++i;
    const size_t digits = i;
    int64_t kb = 0;
    for (; i < status.size() && status[i] >= '0' && status[i] <= '9'; ++i) {
      if (kb > (INT64_MAX / 1024 - 9) / 10) return -1;
      kb = kb * 10 + (status[i] - '0');
    }
    if (i == digits || status.compare(i, 3, " kB") != 0) return -1;
    return kb * 1024;
  };
  for (size_t line = 0; line < status.size();) {
    const size_t end = std::min(status.find('\n', line), status.size());
    if (status.compare(line, 6, "VmRSS:") == 0) rss = value(line + 6);
    if (status.compare(line, 6, "VmHWM:") == 0) hwm = value(line + 6);
    line = end + 1;
  }
  if (rss < 0 || hwm < 0) {
    rss = hwm = -1;
    return false;
  }
  return true;
}

json rss_side_json(const std::vector<RssCall>& calls) {
  int64_t peak = 0;
  for (const auto& c : calls) peak = std::max(peak, c.hwm_after - c.rss_before);
  json j = {{"peak_bytes", peak}, {"calls", calls.size()}};
  if (calls.size() > 1)
    j["growth_bytes_per_call"] = static_cast<double>(calls.back().rss_after - calls.front().rss_after) /
                                 static_cast<double>(calls.size() - 1);
  return j;
}

std::string format_bytes(double bytes) {
  double a = std::fabs(bytes);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

namespace {

// The side fields of a worker's reply (everything but measured/method/reason).
json side_of(const json& reply) {
  json side = json::object();
  for (const auto& [k, v] : reply.items())
    if (k != "measured" && k != "method" && k != "reason" && k != "largest_non_torch") side[k] = v;
  return side;
}

double number_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

MemoryVerdict memory_verdict(const json& candidate, const json& baselines) {
  MemoryVerdict v;
  json& m = v.memory;
  m = json::object();
  m["measured"] = candidate.value("measured", false);
  m["method"] = candidate.value("method", "");
  if (!m["measured"].get<bool>()) {
    m["reason"] = candidate.value("reason", "the candidate's memory was not measured");
    return v;
  }
  m["candidate"] = side_of(candidate);
  m["baselines"] = json::object();
  m["ratio"] = json::object();
  double cand_peak = number_or(candidate, "peak_bytes", 0);
  double baseline_non_torch = 0;
  for (const auto& [name, b] : baselines.items()) {
    if (!b.is_object()) continue;
    if (!b.value("measured", false)) {
      m["baselines"][name] = {{"measured", false}, {"reason", b.value("reason", "not measured")}};
      continue;
    }
    m["baselines"][name] = side_of(b);
    baseline_non_torch = std::max(baseline_non_torch, number_or(b, "non_torch_peak_bytes", 0));
    double base_peak = number_or(b, "peak_bytes", 0);
    if (cand_peak > 0 && base_peak > 0) m["ratio"][name] = base_peak / cand_peak;
  }
  if (cand_peak <= 0)
    m["ratio_note"] = "the candidate's measured peak is 0 bytes: no ratio (a division by zero is not a measurement)";

  double growth = number_or(candidate, "growth_bytes_per_call", 0);
  if (growth >= static_cast<double>(kLeakThresholdBytes))
    v.findings.push_back(make_finding("memory_leak", "warn",
                                      fmt::format("memory held after each call grows by {} per call over {} measured "
                                                  "calls (outputs dropped): the candidate leaks device memory",
                                                  format_bytes(growth), candidate.value("calls", 0)),
                                      fmt::format("growth_bytes_per_call = {:.0f}", growth), "")
                             .to_json());
  double non_torch = number_or(candidate, "non_torch_peak_bytes", 0);
  if (non_torch - baseline_non_torch > static_cast<double>(kNonTorchThresholdBytes)) {
    json largest = candidate.value("largest_non_torch", json::object());
    std::string where;
    if (largest.is_object() && largest.value("bytes", 0.0) > 0)
      where = fmt::format("; the largest is {} from {}", format_bytes(largest.value("bytes", 0.0)),
                          largest.value("source", std::string("an unknown library")).empty()
                              ? std::string("an unknown library")
                              : largest.value("source", std::string()));
    v.findings.push_back(
        make_finding("non_torch_allocation", "warn",
                     fmt::format("the candidate held up to {} of device memory outside PyTorch's allocator during "
                                 "a call (the reference: {}){}; torch.cuda.max_memory_allocated does not see it, "
                                 "kbv's peak_bytes does",
                                 format_bytes(non_torch), format_bytes(baseline_non_torch), where),
                     fmt::format("non_torch_peak_bytes = {:.0f}", non_torch), "")
            .to_json());
  }
  return v;
}

}  // namespace kbv::memory
