// Content hashes (SHA-256, lowercase hex) for the build cache and result keys.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kbv {

std::string sha256_hex(std::string_view data);

// Lowercase hex of `size` bytes (digests, MACs).
std::string hex_of(const unsigned char* bytes, size_t size);

// Hash of several parts, each length-prefixed so ("ab","c") != ("a","bc").
std::string sha256_hex_parts(const std::vector<std::string>& parts);

}  // namespace kbv
