#include "cli/output.h"

#include <mutex>

#include "cli/progress.h"

namespace kbv::cli {

Notify printer(std::string prefix) {
  struct State {
    std::string prefix;
    std::mutex mu;                        // guards `progress` (the display itself is thread-safe)
    std::unique_ptr<Progress> progress;   // between begin_items and end_items
  };
  auto state = std::make_shared<State>();
  state->prefix = std::move(prefix);
  return [state](const Notice& n) {
    const char* p = state->prefix.c_str();
    switch (n.kind) {
      case Notice::Kind::info: std::fprintf(stderr, "%s: %s\n", p, n.text.c_str()); break;
      case Notice::Kind::warning: std::fprintf(stderr, "%s: warning: %s\n", p, n.text.c_str()); break;
      case Notice::Kind::progress: std::fprintf(stderr, "%s\n", n.text.c_str()); break;
      case Notice::Kind::data: std::fwrite(n.text.data(), 1, n.text.size(), stdout); break;
      case Notice::Kind::begin_items: {
        std::lock_guard<std::mutex> lock(state->mu);
        state->progress = std::make_unique<Progress>(n.item, Progress::Options{});
        break;
      }
      case Notice::Kind::item_started: {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->progress) state->progress->started(n.item, n.text);
        break;
      }
      case Notice::Kind::item_done: {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->progress) state->progress->finished(n.item, n.correct, n.text);
        else std::fprintf(stderr, "%s\n", n.text.c_str());
        break;
      }
      case Notice::Kind::end_items: {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->progress) state->progress->stop();
        break;
      }
    }
  };
}

}  // namespace kbv::cli
