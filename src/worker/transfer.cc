#include "worker/transfer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#ifdef KBV_WITH_CUDA
#include <cuda_runtime.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace kbv {
namespace {

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kHalf, "float16"}, {at::kBFloat16, "bfloat16"},
    {at::kLong, "int64"},    {at::kInt, "int32"},      {at::kShort, "int16"},  {at::kChar, "int8"},
    {at::kByte, "uint8"},    {at::kBool, "bool"},      {at::kComplexFloat, "complex64"},
    {at::kComplexDouble, "complex128"}};

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

#ifdef KBV_WITH_CUDA
void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fail(fmt::format("{}: {}", what, cudaGetErrorString(err)));
}
std::string to_hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  auto p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}
bool from_hex(const std::string& s, void* data, size_t n) {
  if (s.size() != 2 * n) return false;
  auto p = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    int hi = v(s[2 * i]), lo = v(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    p[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}
#endif

// Reads or writes all `n` bytes at offset 0 of `fd`; false on an error or a short transfer (a
// file its peer truncated reads short).
bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < n;) {
    ssize_t got = ::pread(fd, p + done, n - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  for (size_t done = 0; done < n;) {
    ssize_t put = ::pwrite(fd, p + done, n - done, static_cast<off_t>(done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    done += static_cast<size_t>(put);
  }
  return true;
}

}  // namespace

std::string dtype_name(at::ScalarType type) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d.name;
  return c10::toString(type);
}

bool dtype_from_name(const std::string& name, at::ScalarType& type) {
  for (const auto& d : kDtypes)
    if (name == d.name) {
      type = d.type;
      return true;
    }
  return false;
}

TransferSet::~TransferSet() { clear(); }

nlohmann::json TransferSet::export_tensor(const at::Tensor& tensor_in, at::Tensor* view) {
  at::Tensor tensor = tensor_in.detach().contiguous();
  size_t bytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
  size_t alloc = bytes > 0 ? bytes : 1;
  nlohmann::json handle = {{"kind", "tensor"},
                           {"bytes", bytes},
                           {"dtype", dtype_name(tensor.scalar_type())},
                           {"sizes", tensor.sizes().vec()}};
  Mapping m;
  m.bytes = alloc;
  m.exported = true;
  if (tensor.is_cuda()) {
#ifdef KBV_WITH_CUDA
    c10::cuda::CUDAGuard guard(tensor.device());
    if (cudaMalloc(&m.ptr, alloc) != cudaSuccess) {
      // Memory torch caches but does not use is still taken from the driver's view: free it, retry.
      cudaGetLastError();
      c10::cuda::CUDACachingAllocator::emptyCache();
      cuda_check(cudaMalloc(&m.ptr, alloc), fmt::format("cudaMalloc of {} bytes for a transfer buffer", alloc).c_str());
    }
    m.cuda = true;
    mappings_.push_back(m);
    if (bytes) cuda_check(cudaMemcpy(m.ptr, tensor.data_ptr(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after a transfer copy");
    cudaIpcMemHandle_t ipc;
    cuda_check(cudaIpcGetMemHandle(&ipc, m.ptr), "cudaIpcGetMemHandle");
    handle["transport"] = "cuda_ipc";
    handle["ipc"] = to_hex(&ipc, sizeof ipc);
    if (view) *view = at::from_blob(m.ptr, tensor.sizes(), tensor.options());
    return handle;
#else
    fail("this kbv worker was built without CUDA support");
#endif
  }
  if (!tensor.device().is_cpu()) fail(fmt::format("cannot share a tensor on device {}", tensor.device().str()));
  static std::random_device rd;
  m.shm_name = fmt::format("/kbv-{}-{}-{:x}", getpid(), counter_++, rd());
  int fd = shm_open(m.shm_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail(fmt::format("shm_open {}: {}", m.shm_name, std::strerror(errno)));
  // Sandboxed (src/sandbox): /dev/shm is a folder this reference shares with its candidates only,
  // which run as another uid and must open these files.
  static const bool shared = std::getenv("KBV_SHM_SHARED") != nullptr;
  if (shared) fchmod(fd, 0666);
  if (ftruncate(fd, static_cast<off_t>(alloc)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(m.shm_name.c_str());
    fail(fmt::format("ftruncate {} to {} bytes: {}", m.shm_name, alloc, std::strerror(err)));
  }
  m.ptr = mmap(nullptr, alloc, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m.ptr == MAP_FAILED) {
    close(fd);
    shm_unlink(m.shm_name.c_str());
    fail(fmt::format("mmap {}: {}", m.shm_name, std::strerror(errno)));
  }
  m.fd = fd;  // kept: the peer may truncate the file, and reads and writes through it cannot fault
  mappings_.push_back(m);
  if (bytes) std::memcpy(m.ptr, tensor.data_ptr(), bytes);
  handle["transport"] = "shm";
  handle["name"] = m.shm_name;
  // The file's identity: an importer refuses a file of that name that is not this one (a peer that
  // shares the folder may have unlinked it and made another: import_tensor).
  struct stat own{};
  if (fstat(fd, &own) == 0) handle["inode"] = static_cast<uint64_t>(own.st_ino);
  if (view) *view = at::from_blob(m.ptr, tensor.sizes(), tensor.options());
  return handle;
}

at::Tensor TransferSet::import_tensor(const nlohmann::json& handle, bool same_file) {
  if (!handle.is_object() || handle.value("kind", "") != "tensor") fail("not a tensor handle");
  at::ScalarType type;
  if (!dtype_from_name(handle.value("dtype", ""), type)) fail("unknown dtype " + handle.value("dtype", ""));
  std::vector<int64_t> sizes = handle.at("sizes").get<std::vector<int64_t>>();
  size_t bytes = handle.at("bytes").get<size_t>();
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (s < 0) fail("negative size in a tensor handle");
    numel *= s;
  }
  if (static_cast<size_t>(numel) * c10::elementSize(type) != bytes) fail("tensor handle: bytes do not match sizes");
  size_t alloc = bytes > 0 ? bytes : 1;
  std::string transport = handle.value("transport", "");
  Mapping m;
  m.bytes = alloc;
  if (transport == "cuda_ipc") {
#ifdef KBV_WITH_CUDA
    cudaIpcMemHandle_t ipc;
    if (!from_hex(handle.value("ipc", ""), &ipc, sizeof ipc)) fail("malformed CUDA IPC handle");
    cuda_check(cudaIpcOpenMemHandle(&m.ptr, ipc, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    m.cuda = true;
    mappings_.push_back(m);
    int device = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    return at::from_blob(m.ptr, sizes, at::TensorOptions().dtype(type).device(at::kCUDA, device));
#else
    fail("this kbv worker was built without CUDA support");
#endif
  }
  if (transport != "shm") fail("unknown transport '" + transport + "'");
  std::string name = handle.value("name", "");
  if (name.rfind("/kbv-", 0) != 0 || name.find('/', 1) != std::string::npos) fail("bad shared-memory name");
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) fail(fmt::format("shm_open {}: {}", name, std::strerror(errno)));
  struct stat st{};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < alloc) {
    close(fd);
    fail(fmt::format("shared buffer {} is smaller than its handle says", name));
  }
  if (const auto ino = handle.find("inode"); same_file && ino != handle.end() &&
                                             (!ino->is_number_unsigned() ||
                                              ino->get<uint64_t>() != static_cast<uint64_t>(st.st_ino))) {
    close(fd);
    throw ReplacedFile(fmt::format(
        "shared buffer {} is not the file its exporter made (inode {}, expected {}): it was replaced", name,
        static_cast<uint64_t>(st.st_ino), ino->dump()));
  }
  m.ptr = mmap(nullptr, alloc, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m.ptr == MAP_FAILED) fail(fmt::format("mmap {}: {}", name, std::strerror(errno)));
  mappings_.push_back(m);
  return at::from_blob(m.ptr, sizes, at::TensorOptions().dtype(type));
}

at::Tensor TransferSet::import_copy(const nlohmann::json& handle) {
  if (!handle.is_object() || handle.value("transport", "") != "shm") return import_tensor(handle);
  // import_tensor checks the handle (name, dtype, sizes against bytes) and the file's size, and
  // maps it; the values are then read through the file, never through that mapping.
  at::Tensor mapped = import_tensor(handle);
  const size_t bytes = handle.at("bytes").get<size_t>();
  at::Tensor out = at::empty(mapped.sizes(), mapped.options());
  const std::string name = handle.value("name", "");
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) fail(fmt::format("shm_open {}: {}", name, std::strerror(errno)));
  const bool whole = read_all(fd, out.data_ptr(), bytes);
  close(fd);
  if (!whole) fail(fmt::format("shared buffer {} is shorter than its handle says (truncated by its writer)", name));
  return out;
}

const TransferSet::Mapping* TransferSet::export_of(const at::Tensor& view) const {
  for (const auto& m : mappings_)
    if (m.exported && m.ptr == view.data_ptr()) return &m;
  return nullptr;
}

std::optional<at::Tensor> TransferSet::read_export(const at::Tensor& view) const {
  const Mapping* m = export_of(view);
  if (!m || m->fd < 0) return view;  // device memory, or not a buffer of ours: as it is
  at::Tensor out = at::empty(view.sizes(), view.options());
  const size_t bytes = static_cast<size_t>(view.numel()) * view.element_size();
  struct stat st{};
  if (fstat(m->fd, &st) != 0 || static_cast<size_t>(st.st_size) < m->bytes) return std::nullopt;
  if (!read_all(m->fd, out.data_ptr(), bytes)) return std::nullopt;
  return out;
}

void TransferSet::write_export(const at::Tensor& view, const at::Tensor& values) {
  const Mapping* m = export_of(view);
  if (!m || m->fd < 0) {
    view.copy_(values);
    return;
  }
  at::Tensor v = values.to(view.scalar_type()).contiguous();
  const size_t bytes = static_cast<size_t>(view.numel()) * view.element_size();
  if (static_cast<size_t>(v.numel()) * v.element_size() != bytes)
    fail(fmt::format("writing {} bytes into the shared buffer {} of {} bytes", v.numel() * v.element_size(),
                     m->shm_name, bytes));
  // A peer that truncates the file again afterwards faults in its own mapping, not in ours.
  if (!write_all(m->fd, v.data_ptr(), bytes)) fail(fmt::format("writing {}: {}", m->shm_name, std::strerror(errno)));
}

void TransferSet::clear() {
  for (auto& m : mappings_) {
    if (m.cuda) {
#ifdef KBV_WITH_CUDA
      if (m.exported)
        cudaFree(m.ptr);
      else
        cudaIpcCloseMemHandle(m.ptr);
#endif
    } else {
      munmap(m.ptr, m.bytes);
      if (m.fd >= 0) close(m.fd);
      if (m.exported) shm_unlink(m.shm_name.c_str());
    }
  }
  mappings_.clear();
}

}  // namespace kbv
