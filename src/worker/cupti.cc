// CUPTI activity and callbacks (cupti.h, docs/MEMORY.md).
#include "worker/cupti.h"

#ifdef KBV_WITH_CUPTI
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif

namespace kbv::cupti {

#ifndef KBV_WITH_CUPTI

bool built() { return false; }
std::string enable(unsigned) { return "this kbv worker was built without CUPTI (no CUDA toolkit with libcupti)"; }
std::string object_of_kernel(const std::string&, uint64_t, const std::function<bool(const std::string&)>&) {
  return "";
}
void disable(unsigned) {}
Records take() { return {}; }
uint64_t now_ns() { return 0; }
uint64_t dropped() { return 0; }

#else

namespace {

constexpr size_t kBufferBytes = 8u << 20;

struct State {
  std::mutex mu;
  Records records;
  struct Launch {
    std::string file;       // the shared object of the launch site ("" when unresolved)
    uint64_t function = 0;  // the launch's function argument (stub address or kernel handle)
  };
  std::unordered_map<uint32_t, Launch> launchers;  // by correlation id
  unsigned enabled = 0;
  bool callbacks_registered = false;
  CUpti_SubscriberHandle subscriber = nullptr;
  uint64_t dropped = 0;
  std::string self;  // this module's file, skipped when walking a launch's stack
};

State& state() {
  static State* s = new State();  // never destroyed: CUPTI may call back during exit
  return *s;
}

std::string error_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
      auto* m = reinterpret_cast<CUpti_ActivityMemory4*>(record);
      if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_MANAGED)
        continue;
      MemoryRecord r;
      r.time_ns = m->timestamp;
      r.alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      if (!r.alloc && m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) continue;
      r.address = m->address;
      r.bytes = m->bytes;
      r.kind = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ? "device" : "managed";
      r.source = m->source ? m->source : "";
      r.async = m->isAsync != 0;
      s.records.memory.push_back(std::move(r));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      KernelRecord r;
      r.name = k->name ? k->name : "";
      r.stream = k->streamId;
      r.start_ns = k->start;
      r.end_ns = k->end;
      r.correlation = k->correlationId;
      s.records.kernels.push_back(std::move(r));
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) s.dropped += dropped;
  std::free(buffer);
}

std::string file_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

bool cuda_internal(const std::string& file) {
  auto has = [&](const char* part) { return file.find(part) != std::string::npos; };
  return has("libcupti") || has("libcuda.so") || has("libcudart") || has("libcuda-");
}

// KBV_CUPTI_DEBUG=1: each of the first 64 launch callbacks is described on stderr (the worker's
// log): the API, the kernel, the frames walked and the launcher found.
bool debug_launches() {
  static const bool on = [] {
    const char* v = std::getenv("KBV_CUPTI_DEBUG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// The first caller outside the CUDA runtime, the driver, CUPTI and this module. `trace`: the files
// of the frames walked, for KBV_CUPTI_DEBUG.
std::string launcher_from_stack(std::string* trace = nullptr) {
  void* frames[48];
  int n = backtrace(frames, 48);
  const std::string& self = state().self;
  for (int i = 1; i < n; ++i) {
    std::string file = file_of(frames[i]);
    if (trace) *trace += (file.empty() ? std::string("?") : file) + " <- ";
    if (file.empty()) return "";
    if (file == self || cuda_internal(file)) continue;
    return file;
  }
  return "";
}

void describe_launch(const CUpti_CallbackData* cb, const char* how, uint64_t function, const std::string& launcher,
                     const std::string& trace) {
  static std::atomic<int> shown{0};
  if (shown.fetch_add(1) >= 64) return;
  std::fprintf(stderr, "kbv cupti: %s %s kernel=%s function=0x%llx correlation=%u launcher=%s%s%s\n",
               cb->functionName ? cb->functionName : "?", how, cb->symbolName ? cb->symbolName : "?",
               static_cast<unsigned long long>(function), cb->correlationId,
               launcher.empty() ? "(unresolved)" : launcher.c_str(),
               trace.empty() ? "" : " stack: ", trace.c_str());
}

thread_local int runtime_launch_depth = 0;
thread_local std::string runtime_launcher;
thread_local uint64_t runtime_function = 0;

bool runtime_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
#if CUDART_VERSION >= 13000
    // CUDA 13's <<<>>>: the compiler-made stub passes a cudaKernel_t handle, not its own address.
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
#endif
      return true;
    default:
      return false;
  }
}

bool driver_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return true;
    default:
      return false;
  }
}

// The host stub of a <<<>>>/cudaLaunchKernel launch lives in the object that compiled the kernel.
const void* runtime_stub(CUpti_CallbackId id, const void* params) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return static_cast<const cudaLaunchKernel_v7000_params*>(params)->func;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      return static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->func;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      return static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params)->func;
    default:
      return nullptr;
  }
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  State& s = state();
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && runtime_launch(id)) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      if (runtime_launch_depth > 0) --runtime_launch_depth;  // its entry may predate enable()
      return;
    }
    ++runtime_launch_depth;
    const bool debug = debug_launches();
    std::string trace;
    // The stub's address names its object; with CUDA 13 the argument may be a kernel handle
    // instead (no object), and then the stack names the caller.
    const void* stub = runtime_stub(id, cb->functionParams);
    runtime_launcher = stub ? file_of(stub) : "";
    runtime_function = reinterpret_cast<uint64_t>(stub);
    const char* how = "runtime/stub";
    if (runtime_launcher.empty()) {
      runtime_launcher = launcher_from_stack(debug ? &trace : nullptr);
      how = stub ? "runtime/handle+stack" : "runtime/stack";
    }
    if (debug) describe_launch(cb, how, runtime_function, runtime_launcher, trace);
    std::lock_guard<std::mutex> lock(s.mu);
    s.launchers[cb->correlationId] = {runtime_launcher, runtime_function};
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && driver_launch(id) && cb->callbackSite == CUPTI_API_ENTER) {
    // A driver launch made by the runtime belongs to the runtime call's launcher.
    const bool debug = debug_launches();
    std::string trace;
    const bool inherited = runtime_launch_depth > 0 && !runtime_launcher.empty();
    std::string launcher = inherited ? runtime_launcher : launcher_from_stack(debug ? &trace : nullptr);
    if (debug)
      describe_launch(cb, inherited ? "driver/runtime's" : "driver/stack", runtime_launch_depth > 0 ? runtime_function : 0,
                      launcher, trace);
    std::lock_guard<std::mutex> lock(s.mu);
    auto& entry = s.launchers[cb->correlationId];
    entry.file = launcher;
    if (runtime_launch_depth > 0) entry.function = runtime_function;
  }
}

std::string enable_callbacks(State& s) {
  if (!s.subscriber) {
    CUptiResult r = cuptiSubscribe(&s.subscriber, on_api, nullptr);
    if (r != CUPTI_SUCCESS) {
      s.subscriber = nullptr;
      return "cuptiSubscribe: " + error_text(r) + " (another CUPTI user, e.g. the torch profiler, holds the subscriber)";
    }
  }
  CUptiResult r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  if (r == CUPTI_SUCCESS) r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  return r == CUPTI_SUCCESS ? "" : "cuptiEnableDomain: " + error_text(r);
}

// Function symbols named `name` in the ELF file at `path` (.symtab and .dynsym; a stub may be
// local), as offsets from the object's load base. Malformed files give nothing.
std::vector<uint64_t> elf_function_offsets(const std::string& path, const std::string& name) {
  std::vector<uint64_t> found;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return found;
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  std::fclose(f);
  auto fits = [&](uint64_t off, uint64_t len) { return off <= data.size() && len <= data.size() - off; };
  if (!fits(0, sizeof(Elf64_Ehdr)) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0 ||
      data[EI_CLASS] != ELFCLASS64)
    return found;
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !fits(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) return found;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), data.data() + eh.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  for (const auto& sh : sections) {
    if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !fits(sh.sh_offset, sh.sh_size) || !fits(strtab.sh_offset, strtab.sh_size))
      continue;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data.data() + sh.sh_offset + off, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_name >= strtab.sh_size) continue;
      const char* s = data.data() + strtab.sh_offset + sym.st_name;
      size_t len = strnlen(s, strtab.sh_size - sym.st_name);
      if (name.size() == len && name.compare(0, len, s, len) == 0) found.push_back(sym.st_value);
    }
  }
  return found;
}

struct LoadedObject {
  std::string path;
  uint64_t base = 0;
};

std::vector<LoadedObject> loaded_objects() {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<LoadedObject>*>(data)->push_back({info->dlpi_name, info->dlpi_addr});
        return 0;
      },
      &objects);
  return objects;
}

}  // namespace

bool built() { return true; }

std::string object_of_kernel(const std::string& name, uint64_t function,
                             const std::function<bool(const std::string&)>& own) {
  if (name.empty() || function == 0) return "";
  for (const auto& object : loaded_objects()) {
    if (!own(object.path)) continue;
    for (uint64_t offset : elf_function_offsets(object.path, name)) {
      const void* stub = reinterpret_cast<const void*>(object.base + offset);
      if (reinterpret_cast<uint64_t>(stub) == function) return object.path;
      cudaKernel_t handle = nullptr;
      bool same = cudaGetKernel(&handle, stub) == cudaSuccess && reinterpret_cast<uint64_t>(handle) == function;
      cudaGetLastError();  // a symbol that is no kernel leaves no error behind for torch to find
      if (debug_launches())
        std::fprintf(stderr, "kbv cupti: %s: %s at 0x%llx has handle 0x%llx; the launch passed 0x%llx\n",
                     object.path.c_str(), name.c_str(), static_cast<unsigned long long>(object.base + offset),
                     reinterpret_cast<unsigned long long>(handle), static_cast<unsigned long long>(function));
      if (same) return object.path;
    }
  }
  return "";
}

std::string enable(unsigned kinds) {
  State& s = state();
  if (!s.callbacks_registered) {
    s.self = file_of(reinterpret_cast<const void*>(&enable));
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks: " + error_text(r);
    s.callbacks_registered = true;
  }
  if ((kinds & kMemory) && !(s.enabled & kMemory)) {
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (r != CUPTI_SUCCESS) return "cuptiActivityEnable(MEMORY2): " + error_text(r);
    s.enabled |= kMemory;
  }
  if ((kinds & kKernels) && !(s.enabled & kKernels)) {
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) return "cuptiActivityEnable(CONCURRENT_KERNEL): " + error_text(r);
    std::string e = enable_callbacks(s);
    if (!e.empty()) {
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      return e;
    }
    s.enabled |= kKernels;
  }
  return "";
}

void disable(unsigned kinds) {
  State& s = state();
  if ((kinds & kMemory) && (s.enabled & kMemory)) {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
    s.enabled &= ~static_cast<unsigned>(kMemory);
  }
  if ((kinds & kKernels) && (s.enabled & kKernels)) {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (s.subscriber) {
      cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    s.enabled &= ~static_cast<unsigned>(kKernels);
  }
}

Records take() {
  State& s = state();
  if (s.callbacks_registered) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(s.mu);
  Records out = std::move(s.records);
  s.records = Records{};
  for (auto& k : out.kernels) {
    auto it = s.launchers.find(k.correlation);
    if (it != s.launchers.end()) {
      k.launcher = it->second.file;
      k.function = it->second.function;
    }
  }
  s.launchers.clear();
  return out;
}

uint64_t now_ns() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

uint64_t dropped() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.dropped;
}

#endif

}  // namespace kbv::cupti
