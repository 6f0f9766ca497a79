// Names of tensor operations, shared by the Python and the C++ rules.
#pragma once
#include <string_view>

namespace kbv {

// A tensor method (or ATen function) that computes: relu, sum, matmul, softmax, add_, ...
// Not allocation, views, shape or pointer access (empty_like, view, size, data_ptr, contiguous).
bool is_compute_method(std::string_view name);

}  // namespace kbv
