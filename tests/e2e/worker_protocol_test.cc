// End-to-end: a real worker (the kbv_worker module) answers malformed requests with a failed
// reply naming what is wrong, and keeps serving (proto/messages.h, worker/worker.cc).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "proto/messages.h"
#include "supervisor/session.h"
#include "support.h"

namespace worker_protocol_test {

using nlohmann::json;
using std::chrono::milliseconds;

TEST(WorkerProtocol, MalformedRequestsGetAFailedReplyAndTheWorkerKeepsServing) {
  kbv::WorkerConfig config = kbv::default_worker_config("");
  config.log_dir = kbv::e2e::scratch_dir("worker_protocol", "logs");
  std::string error;
  auto w = kbv::WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(w) << error;
  struct Case {
    json request;
    std::string says;
  };
  const Case cases[] = {
      {json{{"op", "inputs"}}, "'seed'"},                                   // a required field missing
      {json{{"op", "inputs"}, {"seed", "one"}}, "'seed'"},                  // of the wrong type
      {json{{"op", "load"}, {"path", 3}, {"code", "x"}}, "'path'"},
      {json{{"op", "time"}, {"rule", {{"warmup", "x"}}}}, "in 'rule'"},   // inside a sub-struct
      {json{{"op", "frobnicate"}}, "without a known op"},                   // an unknown op
      {json{{"n", 1}}, "without a known op"},                                // no op at all
      {json::array({1, 2}), "not a JSON object"},                            // not an object
      {json{{"op", "run"}, {"args", json::array()}}, "not known to the reference role"},
      {json{{"op", "check"}, {"outputs", "x"}}, "not a list"},
  };
  for (const Case& c : cases) {
    kbv::Reply r = w->call(c.request, milliseconds(60000));
    ASSERT_EQ(r.status, kbv::Reply::Status::failed) << c.request.dump() << ": " << r.detail << r.body.dump();
    kbv::msg::Failure f = kbv::msg::failure_of(r.body);
    EXPECT_FALSE(f.kind.empty()) << r.body.dump();
    EXPECT_FALSE(f.message.empty()) << r.body.dump();
    if (!c.says.empty()) {
      EXPECT_EQ(f.kind, "protocol_error") << r.body.dump();
      EXPECT_NE(f.message.find(c.says), std::string::npos) << c.request.dump() << " -> " << f.message;
    }
  }
  // Still serving, and a well-formed request gets its typed reply.
  kbv::Reply hello = w->call(kbv::msg::to_json(kbv::msg::HelloRequest{}), milliseconds(60000));
  std::optional<kbv::msg::HelloReply> h = kbv::reply_as<kbv::msg::HelloReply>(hello);
  ASSERT_TRUE(h) << hello.detail << hello.body.dump();
  EXPECT_EQ(h->role, "reference");
  EXPECT_EQ(h->pid, w->pid());
  EXPECT_FALSE(h->torch_version.empty());
  w->stop();
}

// Protocol::cast_init_inputs: the reference casts every get_init_inputs() tensor to the precision's
// dtype (integers and bools included, other values as they are) before Model is built, as
// upstream's _process_input_tensor does, and hands the candidate the cast values; without it the
// init inputs are passed as drawn.
TEST(WorkerProtocol, InitInputsAreCastWhereTheProtocolSaysSo) {
  const std::string code =
      "import torch\n"
      "class Model(torch.nn.Module):\n"
      "    def __init__(self, idx, scale, flag):\n"
      "        super().__init__()\n"
      "        self.register_buffer('idx', idx.float() * scale + flag.float().sum())\n"
      "    def forward(self, x):\n"
      "        return x + self.idx.sum()\n"
      "def get_inputs():\n"
      "    return [torch.rand(4)]\n"
      "def get_init_inputs():\n"
      "    return [torch.arange(3), 2.5, torch.tensor([True, False])]\n";
  for (const bool cast : {false, true}) {
    kbv::WorkerConfig config = kbv::default_worker_config("");
    config.log_dir = kbv::e2e::scratch_dir("worker_protocol", cast ? "cast" : "as-drawn");
    std::string error;
    auto w = kbv::WorkerProcess::start("reference", config, {}, error);
    ASSERT_TRUE(w) << error;
    kbv::msg::LoadRequest load;
    load.path = "/tmp/kbv_init_cast_problem.py";
    load.code = code;
    load.cast_init_inputs = cast;
    kbv::Reply r = w->call(kbv::msg::to_json(load), milliseconds(120000));
    std::optional<kbv::msg::LoadProblemReply> loaded = kbv::reply_as<kbv::msg::LoadProblemReply>(r);
    ASSERT_TRUE(loaded) << r.detail << r.body.dump();
    const json& init = loaded->init_inputs;
    ASSERT_EQ(init.size(), 3u) << init.dump();
    EXPECT_EQ(init[0]["dtype"], cast ? "float32" : "int64") << init.dump();
    EXPECT_EQ(init[1]["kind"], "value") << "a Python float is not a tensor: as it is";
    EXPECT_EQ(init[1]["value"], 2.5);
    EXPECT_EQ(init[2]["dtype"], cast ? "float32" : "bool") << init.dump();
    w->stop();
  }
}

// A shared buffer's handle names the file its exporter made (its inode): a file put in its place
// under the same name, by a peer sharing the folder that unlinked it and made another, is refused by
// the importer. The baselines' twin maps the reference's timing buffers from the folder it shares
// with the candidate, which could otherwise feed it values of its choosing (docs/TIMING.md "The
// baselines' twin").
TEST(WorkerProtocol, ASharedBufferReplacedUnderItsNameIsRefused) {
  const std::string code =
      "import torch\n"
      "class Model(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        return torch.relu(x)\n"
      "def get_inputs():\n"
      "    return [torch.randn(1024)]\n"
      "def get_init_inputs():\n"
      "    return []\n";
  kbv::WorkerConfig config = kbv::default_worker_config("");
  config.log_dir = kbv::e2e::scratch_dir("worker_protocol", "replaced");
  std::string error;
  auto ref = kbv::WorkerProcess::start("reference", config, {}, error);
  ASSERT_TRUE(ref) << error;
  kbv::msg::LoadRequest load;
  load.path = "/tmp/kbv_replaced_buffer_problem.py";
  load.code = code;
  kbv::Reply r = ref->call(kbv::msg::to_json(load), milliseconds(120000));
  std::optional<kbv::msg::LoadProblemReply> problem = kbv::reply_as<kbv::msg::LoadProblemReply>(r);
  ASSERT_TRUE(problem) << r.detail << r.body.dump();
  kbv::msg::TimeInputsRequest inputs;
  inputs.seeds = {7};
  r = ref->call(kbv::msg::to_json(inputs), milliseconds(120000));
  std::optional<kbv::msg::TimeInputsReply> sets = kbv::reply_as<kbv::msg::TimeInputsReply>(r);
  ASSERT_TRUE(sets) << r.detail << r.body.dump();
  const json handle = sets->sets.at(0).at(0);
  ASSERT_EQ(handle.value("transport", ""), "shm") << handle.dump();
  ASSERT_TRUE(handle.contains("inode")) << handle.dump();

  auto twin = kbv::WorkerProcess::start("candidate", config, {}, error, {"", ref.get(), {}});
  ASSERT_TRUE(twin) << error;
  kbv::msg::LoadRequest as_candidate = load;
  as_candidate.code = code + "class ModelNew(Model):\n    pass\n";
  as_candidate.device = "cpu";
  as_candidate.init_inputs = problem->init_inputs;
  r = twin->call(kbv::msg::to_json(as_candidate), milliseconds(120000));
  ASSERT_TRUE(kbv::reply_as<kbv::msg::LoadCandidateReply>(r)) << r.detail << r.body.dump();
  kbv::msg::TimeCandidateRequest time;
  time.timing.rule.warmup = 1;
  time.timing.rule.max_samples = 3;
  time.timing.rule.time_cap_s = 0.05;
  time.timing.flush_bytes = 4096;
  time.sets = sets->sets;
  time.baseline_mode = "fp32";
  r = twin->call(kbv::msg::to_json(time), milliseconds(120000));
  ASSERT_TRUE(kbv::reply_as<kbv::msg::TimeReply>(r)) << "the file as exported: " << r.detail << r.body.dump();

  // Another file under the same name, the same size: what a candidate sharing the folder could make.
  const std::string name = handle["name"].get<std::string>();
  ASSERT_EQ(shm_unlink(name.c_str()), 0) << name;
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << name;
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(handle["bytes"].get<size_t>())), 0);
  close(fd);
  r = twin->call(kbv::msg::to_json(time), milliseconds(120000));
  ASSERT_EQ(r.status, kbv::Reply::Status::failed) << r.body.dump();
  const kbv::msg::Failure failure = kbv::msg::failure_of(r.body);
  EXPECT_EQ(failure.kind, kbv::msg::kSharedBufferReplaced) << r.body.dump();
  EXPECT_NE(failure.message.find("it was replaced"), std::string::npos) << failure.message;
  shm_unlink(name.c_str());
  twin->stop();
  ref->stop();
}

}  // namespace worker_protocol_test
