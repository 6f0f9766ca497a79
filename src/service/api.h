// The evaluation API's requests and answers, apart from HTTP (docs/SERVICE.md): a request body in,
// a status code and a JSON body out. src/service/server.* puts these on cpp-httplib's routes;
// unit tests call them directly with a queue.
#pragma once
#include <condition_variable>
#include <functional>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "service/metrics.h"
#include "service/options.h"

namespace kbv::service {

struct Response {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

// {"error": {"code": status, "message": message}}: every 4xx and 5xx answer's body.
Response error_response(int status, const std::string& message);

// The problems a server can evaluate by name: "level1/19_ReLU" -> its file, from the dataset roots
// given with --problems (KernelBench layout, src/problem).
struct ProblemIndex {
  std::map<std::string, std::filesystem::path> by_name;
  std::vector<std::string> roots;
  std::vector<std::string> warnings;
};
// nullopt-like: `error` set when a root cannot be read.
ProblemIndex index_problems(const std::vector<std::filesystem::path>& roots, std::string& error);

struct ApiConfig {
  OptionLimits limits;
  size_t max_source_bytes = 1 << 20;  // one problem's or solution's source
  size_t max_batch = 1000;            // evaluations in one batch request
  double max_wait_s = 60;             // ?wait= long-poll, at most
  // A problem's source runs in the reference worker, which is not confined (the problem is trusted
  // code, DESIGN.md "Trust model"): taking one from a client is running the client's code on this
  // host as kbv's user. Off unless `kbv serve --allow-problem-source`.
  bool allow_problem_source = false;
};

class Api {
 public:
  Api(queue::Queue& queue, ProblemIndex problems, ApiConfig config, Metrics& metrics);

  Response submit(const std::string& body);        // POST /v1/evaluations
  Response submit_batch(const std::string& body);  // POST /v1/batches
  Response get(const std::string& id, const std::string& wait);  // GET /v1/evaluations/{id}[?wait=S]
  Response health();                               // GET /healthz
  std::string metrics_text();                      // GET /metrics (Prometheus text format)

  // A job finished somewhere in this process: long-polls waiting on it answer at once.
  void notify();
  size_t problem_count() const { return problems_.by_name.size(); }

  // The job spec of one evaluation request (an element of a batch or a whole POST body), or an
  // error response (4xx) saying which field is wrong. `where` prefixes field names ("evaluations[3].").
  std::variant<queue::JobSpec, Response> parse_request(const nlohmann::json& request, const std::string& where);

 private:
  queue::Queue& queue_;
  ProblemIndex problems_;
  ApiConfig config_;
  Metrics& metrics_;
  std::mutex mutex_;
  std::condition_variable finished_;
  unsigned long long generation_ = 0;
};

}  // namespace kbv::service
