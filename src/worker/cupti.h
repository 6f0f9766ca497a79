// The only CUPTI user in kbv (docs/MEMORY.md). A process has one CUPTI subscriber and one set of
// activity buffer callbacks, so everything that needs CUPTI goes through these functions.
// Compiled only when CUDA and libcupti are found (KBV_WITH_CUPTI); without them every call says
// why it cannot work and records nothing.
//
// The state behind this API is process-wide (CUPTI's callbacks are plain C functions); calls are
// thread-safe.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kbv::cupti {

enum Kind : unsigned {
  kMemory = 1,   // device allocations and releases (CUPTI_ACTIVITY_KIND_MEMORY2)
  kKernels = 2,  // kernel executions (CONCURRENT_KERNEL) and their launch sites (API callbacks)
};

struct MemoryRecord {
  uint64_t time_ns = 0;
  bool alloc = true;  // false: a release
  uint64_t address = 0;
  uint64_t bytes = 0;
  std::string kind;    // "device", "managed"
  std::string source;  // the shared object that asked, as CUPTI reports it
  bool async = false;  // cudaMallocAsync / cudaFreeAsync
};

struct KernelRecord {
  std::string name;
  uint32_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation = 0;
  std::string launcher;  // the shared object holding the launch site; "" when unresolved
  uint64_t function = 0;  // the launch's function argument: a host stub or (CUDA 13) a kernel handle
};

struct Records {
  std::vector<MemoryRecord> memory;
  std::vector<KernelRecord> kernels;
};

// True when this build has CUPTI.
bool built();

// Starts recording the given kinds ("" on success, else why not). Memory is best started before
// the CUDA context exists: allocations made before it are not in the ledger.
std::string enable(unsigned kinds);
// Stops recording the given kinds (records already made stay to be taken).
void disable(unsigned kinds);
// Delivers every record still buffered, then hands over (and forgets) all records so far.
Records take();
// The loaded shared object, among those `own` accepts (by path), that registered the kernel
// `name` (its mangled name, also the symbol of its host stub) under the launch argument `function`:
// its stub's symbol is looked up in the object's ELF symbol tables and the stub's kernel handle
// compared with `function`, so a function that merely has the name proves nothing. For launches
// whose stub is not an address and whose stack does not name the launcher. "" when none.
std::string object_of_kernel(const std::string& name, uint64_t function,
                             const std::function<bool(const std::string&)>& own);

// CUPTI's clock, the one its records carry (ns); 0 without CUPTI.
uint64_t now_ns();
// Records dropped because CUPTI ran out of buffer space (a measurement with drops is not exact).
uint64_t dropped();

}  // namespace kbv::cupti
