// KernelBench-Verified's hidden configs (hidden_tests/levelN/ID_hidden.py at 3fdf6fe): after the 5
// standard trials, get_hidden_inputs() calls get_inputs() once per config from the stream the last
// trial seeded, scales the floating tensors of each draw, and for L1/100 replaces a draw's targets.
// kbv represents a config as a Distribution (scale, optional replacement); config i is the i-th
// draw after seeding (0-based), so a config list is a list of distributions in draw order.
#pragma once
#include <string>
#include <vector>

#include "protocol/protocol.h"

namespace kbv {

// The hidden configs of a problem, by its level and file name (upstream keys its hidden files by
// level and problem id; kbv also asks for the file name, so a problem of another suite with the
// same id gets the standard four). 247 of upstream's 250 files hold the standard D1..D4.
std::vector<Distribution> verified_hidden_configs(int level, const std::string& problem_file);

}  // namespace kbv
