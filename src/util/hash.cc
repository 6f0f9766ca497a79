#include "util/hash.h"

#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

namespace kbv {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// OpenSSL failing to hash in memory means the library is broken, not the input:
// an exception rather than an error value.
void check(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("sha256: ") + what + " failed");
}

MdCtx start() {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx) throw std::runtime_error("sha256: EVP_MD_CTX_new failed");
  check(EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr), "EVP_DigestInit_ex");
  return ctx;
}

void update(EVP_MD_CTX* ctx, const void* data, size_t size) {
  check(EVP_DigestUpdate(ctx, data, size), "EVP_DigestUpdate");
}

std::string finish(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  check(EVP_DigestFinal_ex(ctx, digest, &size), "EVP_DigestFinal_ex");
  return hex_of(digest, size);
}

}  // namespace

std::string hex_of(const unsigned char* bytes, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex.push_back(kHex[bytes[i] >> 4]);
    hex.push_back(kHex[bytes[i] & 0xf]);
  }
  return hex;
}

std::string sha256_hex(std::string_view data) {
  MdCtx ctx = start();
  update(ctx.get(), data.data(), data.size());
  return finish(ctx.get());
}

std::string sha256_hex_parts(const std::vector<std::string>& parts) {
  MdCtx ctx = start();
  for (const std::string& part : parts) {
    // 8-byte little-endian length before each part: no two part lists share a byte stream.
    uint64_t n = part.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    update(ctx.get(), len, sizeof len);
    update(ctx.get(), part.data(), part.size());
  }
  return finish(ctx.get());
}

}  // namespace kbv
