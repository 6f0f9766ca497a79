// How a command's library code tells the CLI what happened (DESIGN.md, "Errors and exit codes").
// Nothing below src/cli prints or exits: a command's function returns an Outcome, and what a user
// should see while it runs goes to a Notify callback, which src/cli prints. The exit code is
// chosen from Outcome::status in one place (src/cli/output.h; the contract is docs/CLI.md).
#pragma once
#include <functional>
#include <string>
#include <utility>

namespace kbv {

enum class Status {
  ok,           // done: every item handled (a verdict, even `wrong_output`, is a result)
  incomplete,   // done, but some items could not be handled; running again retries them
  input_error,  // unusable input (a file, a flag's value, a dataset): nothing or little was done
  interrupted,  // Ctrl-C: what was done is kept, running again resumes
  internal,     // kbv's own fault (a bug, the machine out of a resource kbv needs)
};

struct Outcome {
  Status status = Status::ok;
  std::string message;  // one actionable sentence for every status but ok (may be empty then)

  static Outcome done() { return {}; }
  static Outcome fail(Status s, std::string m) { return {s, std::move(m)}; }
  bool ok() const { return status == Status::ok; }
};

struct Notice {
  enum class Kind {
    info,     // a line for the user (stderr)
    warning,  // a line for the user, marked as a warning (stderr)
    progress, // a line of progress, shown as it is (stderr)
    data,     // the command's own output, verbatim (stdout)
    // A run of items (samples, problems) that a terminal may show as a live status line:
    begin_items,   // `item` items follow
    item_started,  // item `item` started; `text` says which (shown as running)
    item_done,     // item `item` finished; `text` is its line, `correct` counts it
    end_items,     // the run is over (before the command's closing lines)
  } kind = Kind::info;
  std::string text;
  size_t item = 0;       // begin_items: how many; item_started/item_done: which one
  bool correct = false;  // item_done
};
using Notify = std::function<void(const Notice&)>;

inline void info(const Notify& notify, std::string text) {
  if (notify) notify({Notice::Kind::info, std::move(text)});
}
inline void warn(const Notify& notify, std::string text) {
  if (notify) notify({Notice::Kind::warning, std::move(text)});
}
inline void progress(const Notify& notify, std::string text) {
  if (notify) notify({Notice::Kind::progress, std::move(text)});
}
inline void data(const Notify& notify, std::string text) {
  if (notify) notify({Notice::Kind::data, std::move(text)});
}

inline void begin_items(const Notify& notify, size_t count) {
  if (notify) notify({Notice::Kind::begin_items, "", count});
}
inline void item_started(const Notify& notify, size_t item, std::string what) {
  if (notify) notify({Notice::Kind::item_started, std::move(what), item});
}
inline void item_done(const Notify& notify, size_t item, bool correct, std::string line) {
  if (notify) notify({Notice::Kind::item_done, std::move(line), item, correct});
}
inline void end_items(const Notify& notify) {
  if (notify) notify({Notice::Kind::end_items, ""});
}

}  // namespace kbv
