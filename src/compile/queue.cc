#include "compile/queue.h"

#include <algorithm>

namespace kbv {

BuildQueue::BuildQueue(size_t count, std::function<BuildResult(size_t)> build, int jobs)
    : build_(std::move(build)), promises_(count) {
  for (auto& p : promises_) futures_.push_back(p.get_future().share());
  for (int t = 0; t < std::max(1, jobs); ++t)
    threads_.emplace_back([this]() {
      for (;;) {
        size_t i = next_++;
        if (i >= promises_.size()) return;
        promises_[i].set_value(build_(i));
      }
    });
}

BuildQueue::~BuildQueue() {
  for (auto& t : threads_) t.join();
}

BuildResult BuildQueue::get(size_t i) { return futures_.at(i).get(); }

}  // namespace kbv
