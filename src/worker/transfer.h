// Tensors crossing between the two workers, by handle and never as Python objects:
// CPU: a file in /dev/shm mapped by both; CUDA: a cudaMalloc'd buffer shared by CUDA IPC.
// Handle JSON: {"kind": "tensor", "transport": "shm"|"cuda_ipc", "name" | "ipc": ...,
//               "bytes": N, "dtype": "float32", "sizes": [...]}
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace kbv {

std::string dtype_name(at::ScalarType type);
// Returns false for a name it does not know.
bool dtype_from_name(const std::string& name, at::ScalarType& type);

// Owns the buffers this process exported and the mappings it imported, until clear().
// A shared file replaced under its name since it was exported (import_tensor's `same_file`).
struct ReplacedFile : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
  // Maps a peer's handle. The tensor stays valid until clear(). Throws on a bad handle. With
  // `same_file`, a CPU file of the handle's name that is not the one its exporter made (another
  // inode than the handle's: a peer sharing the folder unlinked it and made another) throws
  // ReplacedFile.
  at::Tensor import_tensor(const nlohmann::json& handle, bool same_file = false);
  // What a judge reads of a peer (the reference of a candidate): a CPU handle's file read into
  // memory of this process, so that a peer that truncates its file makes a short read (thrown as an
  // error naming the buffer), never SIGBUS in the judge (examples/level1/19_ReLU/cpu_truncate_input.py).
  // A CUDA handle is mapped as import_tensor does (device memory cannot be shrunk under us).
  at::Tensor import_copy(const nlohmann::json& handle);
  // The current values of a buffer this process exported (`view` from export_tensor), read through
  // its file: nullopt when the peer truncated the file. A CUDA export: `view` itself.
  std::optional<at::Tensor> read_export(const at::Tensor& view) const;
  // Writes `values` into a buffer this process exported, through its file (a truncated file grows
  // back, where a store into the mapping would be SIGBUS). A CUDA export: copied on the device.
  void write_export(const at::Tensor& view, const at::Tensor& values);
  // Unmaps everything imported, frees everything exported.
  void clear();

 private:
  struct Mapping {
    void* ptr = nullptr;
    size_t bytes = 0;
    bool cuda = false;
    bool exported = false;
    std::string shm_name;  // exported shm: unlinked at clear()
    int fd = -1;           // exported shm: its file, for read_export/write_export; closed at clear()
  };
  const Mapping* export_of(const at::Tensor& view) const;
  std::vector<Mapping> mappings_;
  unsigned counter_ = 0;
};

}  // namespace kbv
