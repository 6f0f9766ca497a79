// The CPU sampler of the runtime audit (worker/audit.cc): SIGPROF on the process's CPU time, the
// interrupted addresses resolved to (object, symbol), the candidate's own objects told apart.
#include "worker/cpu_sampler.h"

#include <elf.h>
#include <link.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>

using nlohmann::json;

namespace kbv::audit {
namespace {

// ---------------------------------------------------------------------------------------------
// Own code: shared objects loaded from the candidate's extension folder (own_dir(), cpu_sampler.h).
std::string canonical_or_empty(const char* p) {
  if (!p || !*p) return "";
  char* r = realpath(p, nullptr);
  if (!r) return p;
  std::string s(r);
  std::free(r);
  return s;
}
}  // namespace

std::string g_own_dir;
bool g_own_dir_read = false;

const std::string& own_dir() { return g_own_dir; }
void read_own_dir() {
  if (g_own_dir_read) return;  // once: a later call may come after candidate code ran
  g_own_dir = canonical_or_empty(std::getenv("TORCH_EXTENSIONS_DIR"));
  g_own_dir_read = true;
}

namespace {

bool under_own_dir(const std::string& path) {
  if (g_own_dir.empty() || path.empty()) return false;
  std::string c = canonical_or_empty(path.c_str());
  return c.size() > g_own_dir.size() && c.compare(0, g_own_dir.size(), g_own_dir) == 0 && c[g_own_dir.size()] == '/';
}

// ---------------------------------------------------------------------------------------------
// SIGPROF sampler: ITIMER_PROF fires every kPeriodUs of the process's CPU time; the handler
// stores the interrupted instruction address in a preallocated array (async-signal-safe: one
// atomic add and one store). The handler stays installed once set (a SIGPROF still pending
// after the timer stops must not meet the default action, which kills the process).
uintptr_t g_pcs[kMaxSamples];

}  // namespace

std::atomic<size_t> g_count{0};
std::atomic<bool> g_active{false};

namespace {

#if defined(__x86_64__)
uintptr_t pc_of(void* uc) { return static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]); }
#elif defined(__aarch64__)
uintptr_t pc_of(void* uc) { return static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.pc); }
#else
uintptr_t pc_of(void*) { return 0; }
#endif

void on_sigprof(int, siginfo_t*, void* uc) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  size_t i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) g_pcs[i] = pc_of(uc);
}

}  // namespace

bool install_handler(std::string& error) {
  static bool installed = false;
  if (installed) return true;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, nullptr) != 0) {
    error = fmt::format("sigaction(SIGPROF): {}", std::strerror(errno));
    return false;
  }
  installed = true;
  return true;
}

// The timer runs for the whole audited phase (re-arming it per call would restart its countdown
// and a call shorter than the period would never be sampled); samples count only while `g_active`.
void arm_timer(bool on) {
  itimerval t{};
  if (on) {
    t.it_interval.tv_usec = kPeriodUs;
    t.it_value.tv_usec = kPeriodUs;
  }
  setitimer(ITIMER_PROF, &t, nullptr);
}

// What is wrong with the sampler now ("" when intact): its timer disarmed or re-timed, its
// handler replaced, SIGPROF blocked on this thread (T23: code under audit that blinds it). Put
// back as it was, so the next call is sampled again.
std::string sampler_disturbance() {
  std::string what;
  itimerval t{};
  getitimer(ITIMER_PROF, &t);
  if (t.it_interval.tv_sec != 0 || t.it_interval.tv_usec != kPeriodUs)
    what = fmt::format("ITIMER_PROF re-armed with an interval of {} us", t.it_interval.tv_sec * 1000000L + t.it_interval.tv_usec);
  struct sigaction cur;
  std::memset(&cur, 0, sizeof cur);
  sigaction(SIGPROF, nullptr, &cur);
  if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigprof) {
    if (what.empty()) what = "the SIGPROF handler was replaced";
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, nullptr);
  }
  sigset_t mask;
  sigemptyset(&mask);
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  if (sigismember(&mask, SIGPROF)) {
    if (what.empty()) what = "SIGPROF was blocked";
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_UNBLOCK, &prof, nullptr);
  }
  if (!what.empty()) {
    itimerval on{};
    on.it_interval.tv_usec = kPeriodUs;
    on.it_value.tv_usec = kPeriodUs;
    setitimer(ITIMER_PROF, &on, nullptr);
  }
  return what;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Address -> (object, symbol). Objects from dl_iterate_phdr (PT_LOAD ranges); symbols of own
// objects from their ELF .symtab (or .dynsym), read from the file once.
struct Symbol {
  uintptr_t start, end;
  std::string name;
};
struct Object {
  std::string path;
  uintptr_t base = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  bool own = false;
};

std::map<std::string, std::vector<Symbol>>& symbol_cache() {
  static std::map<std::string, std::vector<Symbol>> cache;
  return cache;
}

const std::vector<Symbol>& symbols_of(const std::string& path) {
  auto& cache = symbol_cache();
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  std::vector<Symbol>& out = cache[path];
  std::ifstream f(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return out;
  if (eh.e_shoff == 0 || eh.e_shoff + static_cast<uint64_t>(eh.e_shnum) * sizeof(Elf64_Shdr) > data.size())
    return out;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), data.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  auto read_table = [&](uint32_t type) {
    for (const auto& s : sh) {
      if (s.sh_type != type || s.sh_link >= sh.size()) continue;
      const Elf64_Shdr& strtab = sh[s.sh_link];
      if (s.sh_offset + s.sh_size > data.size() || strtab.sh_offset + strtab.sh_size > data.size()) continue;
      size_t n = s.sh_size / sizeof(Elf64_Sym);
      for (size_t i = 0; i < n; ++i) {
        Elf64_Sym sym;
        std::memcpy(&sym, data.data() + s.sh_offset + i * sizeof(Elf64_Sym), sizeof sym);
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 || sym.st_name >= strtab.sh_size) continue;
        const char* name = data.data() + strtab.sh_offset + sym.st_name;
        size_t len = strnlen(name, strtab.sh_size - sym.st_name);
        out.push_back({sym.st_value, sym.st_value + std::max<uint64_t>(sym.st_size, 1), std::string(name, len)});
      }
    }
  };
  read_table(SHT_SYMTAB);
  if (out.empty()) read_table(SHT_DYNSYM);
  std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  return out;
}

int collect_object(dl_phdr_info* info, size_t, void* data) {
  auto* objects = static_cast<std::vector<Object>*>(data);
  Object o;
  o.path = info->dlpi_name ? info->dlpi_name : "";
  o.base = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    o.ranges.push_back({start, start + ph.p_memsz});
  }
  objects->push_back(std::move(o));
  return 0;
}

std::vector<Object> loaded_objects() {
  std::vector<Object> objects;
  dl_iterate_phdr(collect_object, &objects);
  static std::map<std::string, bool> own_cache;
  for (auto& o : objects) {
    if (o.path.empty()) o.path = "(main program)";
    auto it = own_cache.find(o.path);
    o.own = it != own_cache.end() ? it->second : (own_cache[o.path] = under_own_dir(o.path));
  }
  return objects;
}

}  // namespace

// Samples [from, to) grouped by object and (own objects) symbol:
// [{"object", "own_object", "symbol", "count"}].
json resolve(size_t from, size_t to) {
  std::vector<Object> objects = loaded_objects();
  std::map<std::tuple<std::string, bool, std::string>, int64_t> groups;
  for (size_t i = from; i < to && i < kMaxSamples; ++i) {
    uintptr_t pc = g_pcs[i];
    const Object* hit = nullptr;
    for (const auto& o : objects) {
      for (const auto& [a, b] : o.ranges)
        if (pc >= a && pc < b) {
          hit = &o;
          break;
        }
      if (hit) break;
    }
    if (!hit) {
      ++groups[{"(anonymous mapping: JIT or unmapped code)", false, ""}];
      continue;
    }
    std::string symbol;
    if (hit->own) {
      const auto& syms = symbols_of(hit->path);
      uintptr_t off = pc - hit->base;
      auto it = std::upper_bound(syms.begin(), syms.end(), off,
                                 [](uintptr_t v, const Symbol& s) { return v < s.start; });
      if (it != syms.begin()) {
        --it;
        if (off < it->end) symbol = it->name;
      }
      // Outside every function of an object that has a symbol table: PLT stubs and padding.
      if (symbol.empty() && !syms.empty()) symbol = "(PLT or padding)";
    }
    ++groups[{hit->path, hit->own, symbol}];
  }
  json out = json::array();
  for (const auto& [key, n] : groups)
    out.push_back({{"object", std::get<0>(key)}, {"own_object", std::get<1>(key)}, {"symbol", std::get<2>(key)},
                   {"count", n}});
  return out;
}

}  // namespace kbv::audit
