// Builds ahead of their evaluation, on a pool of CPU threads.
#pragma once
#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "compile/build.h"

namespace kbv {

// Runs build(i) for i in [0, count) on `jobs` threads, in order; get(i) waits for the i-th.
// Builds need no GPU, so they overlap with evaluations. Joins on destruction.
class BuildQueue {
 public:
  BuildQueue(size_t count, std::function<BuildResult(size_t)> build, int jobs);
  ~BuildQueue();
  BuildQueue(const BuildQueue&) = delete;
  BuildQueue& operator=(const BuildQueue&) = delete;
  BuildResult get(size_t i);

 private:
  std::function<BuildResult(size_t)> build_;
  std::vector<std::promise<BuildResult>> promises_;
  std::vector<std::shared_future<BuildResult>> futures_;
  std::atomic<size_t> next_{0};
  std::vector<std::thread> threads_;
};

}  // namespace kbv
