// WorkerProcess against a stand-in worker (plain python3, no torch): requests during which the
// worker asks the supervisor something (fresh timing draws, docs/TIMING.md).
#include "supervisor/session.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace kbv {
namespace session_test {
namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

// Speaks the worker protocol on fds 3/4. "ask" {n}: asks {"op": "draw", "index": i} n times, then
// replies with the answers it got. "leave": starts a process in a session of its own (out of the
// worker's process group) and replies with its pid.
constexpr const char* kFakeWorker = R"(#!/usr/bin/env python3
import json, os, struct, subprocess
def read_exact(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c:
            return None
        b += c
    return b
def read():
    h = read_exact(4)
    return None if h is None else json.loads(read_exact(struct.unpack("<I", h)[0]))
def write(m):
    b = json.dumps(m).encode()
    os.write(4, struct.pack("<I", len(b)) + b)
while True:
    m = read()
    if m is None or m.get("op") == "exit":
        break
    if m.get("op") == "heap":  # is a fresh 4 MiB malloc in the brk heap (not mmap'd on its own)?
        import ctypes
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        p = libc.malloc(4 << 20)
        heap = [l.split()[0].split("-") for l in open("/proc/self/maps") if l.rstrip().endswith("[heap]")]
        inside = any(int(lo, 16) <= p < int(hi, 16) for lo, hi in heap)
        write({"ok": True, "in_heap": inside, "tunables": os.environ.get("GLIBC_TUNABLES", "")})
        continue
    if m.get("op") == "leave":
        p = subprocess.Popen(["sleep", "300"], start_new_session=True)
        write({"ok": True, "pid": p.pid})
        continue
    answers = []
    for i in range(m.get("n", 0)):
        write({"op": "draw", "index": i})
        answers.append(read())
    write({"ok": True, "answers": answers})
)";

std::unique_ptr<WorkerProcess> start_fake() {
  fs::path dir = fs::temp_directory_path() / ("kbv-session-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path script = dir / "fake_worker.py";
  std::ofstream(script) << kFakeWorker;
  fs::permissions(script, fs::perms::owner_all);
  WorkerConfig config;
  config.python = script.string();  // run with the worker's arguments, which it ignores
  config.worker_dir = dir;
  config.log_dir = dir;
  std::string error;
  auto w = WorkerProcess::start("candidate", config, {}, error);
  EXPECT_TRUE(w) << error;
  return w;
}

TEST(WorkerSession, AsksDuringARequestAreAnsweredInOrder) {
  auto w = start_fake();
  ASSERT_TRUE(w);
  std::vector<int> seen;
  Reply r = w->call({{"op", "time"}, {"n", 3}}, milliseconds(10000), [&](const json& ask) {
    seen.push_back(ask.value("index", -1));
    return json{{"ok", true}, {"echo", ask["index"]}};
  });
  ASSERT_EQ(r.status, Reply::Status::ok) << r.detail;
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(r.body["answers"].size(), 3u);
  EXPECT_EQ(r.body["answers"][2]["echo"], 2);
  // The worker is still usable afterwards.
  Reply again = w->call({{"op", "time"}, {"n", 0}}, milliseconds(10000));
  EXPECT_EQ(again.status, Reply::Status::ok) << again.detail;
}

TEST(WorkerSession, AnAskWithoutAHandlerIsAGarbledChannel) {
  auto w = start_fake();
  ASSERT_TRUE(w);
  Reply r = w->call({{"op", "run"}, {"n", 1}}, milliseconds(10000));
  EXPECT_EQ(r.status, Reply::Status::channel_error);
  EXPECT_NE(r.detail.find("asked \"draw\" during op 'run', which takes no questions"), std::string::npos) << r.detail;
  EXPECT_FALSE(w->alive());
  Reply after = w->call({{"op", "time"}, {"n", 0}}, milliseconds(10000));
  EXPECT_EQ(after.status, Reply::Status::died);
  EXPECT_NE(after.detail.find("the candidate worker is not running: it was killed after an unreadable reply to op 'run'"),
            std::string::npos)
      << after.detail;
}

// A process the worker started in a session of its own survives a kill of the worker's group; the
// worker's stop finds it (kbv adopted it), kills it and names it.
TEST(WorkerSession, StopKillsWhatLeftTheGroupAndNamesIt) {
  auto w = start_fake();
  ASSERT_TRUE(w);
  Reply r = w->call({{"op", "leave"}}, milliseconds(10000));
  ASSERT_EQ(r.status, Reply::Status::ok) << r.detail;
  const int pid = r.body["pid"].get<int>();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::getsid(pid), pid);
  w->stop();
  ASSERT_EQ(w->strays().size(), 1u);
  EXPECT_EQ(w->strays()[0].pid, pid);
  EXPECT_EQ(w->strays()[0].command, "sleep 300");
  EXPECT_NE(::kill(pid, 0), 0) << "the process that left the group is still there";
  Reply after = w->call({{"op", "time"}, {"n", 0}}, milliseconds(10000));
  EXPECT_NE(after.detail.find("the candidate worker is not running: it was stopped"), std::string::npos) << after.detail;
}

// Every worker starts with the same fixed malloc parameters (kWorkerMallocTunables): a 4 MiB
// allocation comes from the heap, where glibc's default (mmap from 128 KiB until a free raises
// the threshold) would map it on its own.
TEST(WorkerSession, WorkersStartWithFixedMallocParameters) {
  auto w = start_fake();
  ASSERT_TRUE(w);
  Reply r = w->call({{"op", "heap"}}, milliseconds(10000));
  ASSERT_EQ(r.status, Reply::Status::ok) << r.detail;
  EXPECT_EQ(r.body["tunables"], kWorkerMallocTunables);
  EXPECT_TRUE(r.body["in_heap"].get<bool>()) << "a 4 MiB malloc was mmap'd: the fixed mmap threshold did not apply";
  w->stop();
}

TEST(WorkerSession, TimeSpentAnsweringDoesNotCountAgainstTheDeadline) {
  auto w = start_fake();
  ASSERT_TRUE(w);
  // Three answers of 400 ms each, under a 1 s deadline for the worker's own time.
  Reply r = w->call({{"op", "time"}, {"n", 3}}, milliseconds(1000), [&](const json&) {
    std::this_thread::sleep_for(milliseconds(400));
    return json{{"ok", true}};
  });
  EXPECT_EQ(r.status, Reply::Status::ok) << r.detail;
}

}  // namespace session_test
}  // namespace kbv
