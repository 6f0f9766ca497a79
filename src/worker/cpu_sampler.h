// The CPU sampler of the runtime audit (worker/audit.cc). SIGPROF sampler: ITIMER_PROF fires every
// kPeriodUs of the process's CPU time; the handler stores the interrupted instruction address in
// a preallocated array while `g_active` is set. resolve() groups the samples by object and, for
// the candidate's own objects (under TORCH_EXTENSIONS_DIR), by symbol.
#pragma once
#include <atomic>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#if defined(__x86_64__) || defined(__aarch64__)
#define KBV_SAMPLER 1
#else
#define KBV_SAMPLER 0
#endif

namespace kbv::audit {

constexpr long kPeriodUs = 1000;
constexpr size_t kMaxSamples = 1 << 17;
extern std::atomic<size_t> g_count;  // samples taken (may pass kMaxSamples: the rest are dropped)
extern std::atomic<bool> g_active;   // samples count only while set

// The candidate's extension folder (TORCH_EXTENSIONS_DIR, canonical); "" when not set. Read once,
// by read_own_dir() as serve() starts, before any candidate code runs (which could change
// os.environ): not when the module is loaded, which in a worker forked by the zygote
// (worker/zygote.h) was before the worker's environment was set.
const std::string& own_dir();
void read_own_dir();

// Installs the SIGPROF handler once (it stays); false and `error` when it cannot.
bool install_handler(std::string& error);
// The timer runs for the whole audited phase (re-arming it per call would restart its countdown
// and a call shorter than the period would never be sampled); samples count only while `g_active`.
void arm_timer(bool on);
// What is wrong with the sampler now ("" when intact): its timer disarmed or re-timed, its
// handler replaced, SIGPROF blocked on this thread (T23: code under audit that blinds it). Put
// back as it was, so the next call is sampled again.
std::string sampler_disturbance();
// CPU time of this process so far, in milliseconds.
double process_cpu_ms();
// Samples [from, to) grouped by object and (own objects) symbol:
// [{"object", "own_object", "symbol", "count"}].
nlohmann::json resolve(size_t from, size_t to);

}  // namespace kbv::audit
