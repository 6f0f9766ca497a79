// Threads of this process, for the runtime audit (worker/audit.cc).
#pragma once
#include <set>

#include <nlohmann/json.hpp>

namespace kbv::audit {

// The ids of this process's threads now (/proc/self/task).
std::set<int> thread_ids();
// Threads alive now and not in `before`, watched for `window_ms`: state right away, CPU time used
// during the window, whether they exited.
nlohmann::json watch_new_threads(const std::set<int>& before, double window_ms);

}  // namespace kbv::audit
