#include "supervisor/problem_list.h"

#include <chrono>

namespace kbv {

ProblemListResult list_problems(const ProblemListOptions& opt, const Notify& notify) {
  ProblemListResult result;
  Discovery d = discover_dataset(opt.dir, opt.level);
  if (!d.error.empty()) return {Outcome::fail(Status::input_error, d.error), {}};
  for (const auto& w : d.warnings) warn(notify, w);
  EvalOptions o = opt.eval;
  o.meta_model = true;  // shapes only: nothing runs the Model, so it is built without its parameters' memory
  if (opt.shapes) {
    std::string error;
    std::optional<Environment> env = probe_environment(o, error);
    if (!env) return {Outcome::fail(Status::input_error, error), {}};
    o.device = env->device;
    o.cpu = resolve_cpu_budget(o);
  }
  ReferenceHost reference;
  for (const auto& p : d.problems) {
    ProblemListing row;
    row.problem = p;
    if (opt.shapes) {
      msg::LoadProblemReply load;
      FailureKind failure;
      WorkerProcess* w = reference.get(p.path, o, load, failure);
      Reply r;
      std::optional<msg::DescribeReply> described;
      if (w) {
        r = w->call(msg::to_json(msg::DescribeRequest{42}), std::chrono::milliseconds(300000));
        described = reply_as<msg::DescribeReply>(r);
      }
      if (described) {
        row.draw = described->draw;
        row.draw_note = described->note;
        row.sizes = load.sizes;
        row.model = load.model;
        row.model_note = load.model_note;
        row.inputs = nlohmann::json::array();
        for (const auto& i : described->inputs) {
          row.inputs.push_back(msg::to_json(i));
          if (!row.shapes.empty()) row.shapes += ", ";
          if (i.sizes) {
            std::string s;
            for (int64_t n : *i.sizes) s += (s.empty() ? "" : "x") + std::to_string(n);
            row.shapes += i.dtype.value_or("?") + "[" + s + "]";
          } else {
            row.shapes += i.value.value_or("?");
          }
        }
      } else {
        row.error = !w                                    ? failure.message
                    : r.status == Reply::Status::failed ? msg::failure_of(r.body).message
                                                        : r.detail;
        row.shapes = "error: " + row.error;
      }
    }
    result.problems.push_back(std::move(row));
  }
  return result;
}

}  // namespace kbv
