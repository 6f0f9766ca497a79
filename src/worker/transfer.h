// Tensors crossing between the two workers, by handle and never as Python objects:
// CPU: a file in /dev/shm mapped by both; CUDA: a cudaMalloc'd buffer shared by CUDA IPC.
// Handle JSON: {"kind": "tensor", "transport": "shm"|"cuda_ipc", "name" | "ipc": ...,
//               "bytes": N, "dtype": "float32", "sizes": [...]}
#pragma once
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace kbv {

std::string dtype_name(at::ScalarType type);
// Returns false for a name it does not know.
bool dtype_from_name(const std::string& name, at::ScalarType& type);

// Owns the buffers this process exported and the mappings it imported, until clear().
class TransferSet {
 public:
  TransferSet() = default;
  ~TransferSet();
  TransferSet(const TransferSet&) = delete;
  TransferSet& operator=(const TransferSet&) = delete;

  // Copies `tensor` (any layout) into a fresh shared buffer; returns its handle and, in
  // `view`, a tensor over the shared buffer (what the peer will see and may write to).
  // Throws std::runtime_error with a message on failure.
  nlohmann::json export_tensor(const at::Tensor& tensor, at::Tensor* view = nullptr);
  // Maps a peer's handle. The tensor stays valid until clear(). Throws on a bad handle.
  at::Tensor import_tensor(const nlohmann::json& handle);
  // Unmaps everything imported, frees everything exported.
  void clear();

 private:
  struct Mapping {
    void* ptr = nullptr;
    size_t bytes = 0;
    bool cuda = false;
    bool exported = false;
    std::string shm_name;  // exported shm: unlinked at clear()
  };
  std::vector<Mapping> mappings_;
  unsigned counter_ = 0;
};

}  // namespace kbv
