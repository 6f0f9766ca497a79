"""Unit tests of kbv_client against a stand-in server on loopback (http.server): the requests it
sends, how it reads answers and errors, the long-poll loop, the batch form and the reward formula.
The client against a real `kbv serve` is tests/service/test_serve.py."""

import json
import math
import os
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kbv_client import Client, KbvError, reward
from kbv_client.client import request_body

TOKEN = "t" * 32


class Fake(BaseHTTPRequestHandler):
    """Queues jobs in memory; a job is done after `polls_to_finish` status requests."""

    jobs = {}
    seen = []
    polls_to_finish = 2

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _authorized(self):
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, {"error": {"code": 401, "message": "wrong token"}})
            return False
        return True

    def _queue(self, body):
        src = body["solution"]["source"]
        jid = f"j{len(Fake.jobs)}"
        Fake.jobs[jid] = {"polls": 0, "fail": "FAIL" in src, "body": body}
        return jid

    def do_POST(self):
        if not self._authorized():
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Fake.seen.append((self.path, body))
        if self.path == "/v1/evaluations":
            if "problem" not in body:
                return self._send(400, {"error": {"code": 400, "message": "problem: missing"}})
            return self._send(202, {"id": self._queue(body), "status": "queued"})
        if self.path == "/v1/batches":
            return self._send(202, {"ids": [self._queue(b) for b in body["evaluations"]]})
        self._send(404, {"error": {"code": 404, "message": "no such route"}})

    def do_GET(self):
        if not self._authorized():
            return
        path, _, query = self.path.partition("?")
        Fake.seen.append((self.path, None))
        jid = path.rsplit("/", 1)[-1]
        job = Fake.jobs.get(jid)
        if job is None:
            return self._send(404, {"error": {"code": 404, "message": f"no evaluation with id '{jid}'"}})
        job["polls"] += 1
        if job["polls"] < Fake.polls_to_finish:
            return self._send(200, {"id": jid, "status": "running"})
        if job["fail"]:
            return self._send(200, {"id": jid, "status": "failed", "error": "attempts exhausted"})
        return self._send(200, {"id": jid, "status": "done", "record": {"verdict": "correct", "job": jid}})


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        Fake.jobs.clear()
        Fake.seen.clear()
        self.client = Client(self.url, TOKEN, poll_wait=1)

    def test_request_body_tells_names_sources_and_paths_apart(self):
        self.assertEqual(request_body("level1/19_ReLU", "x = 1\n", {})["problem"], {"name": "level1/19_ReLU"})
        self.assertEqual(request_body("class Model:\n  pass\n", "x", {})["problem"], {"source": "class Model:\n  pass\n"})
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("class ModelNew: pass\n")
        try:
            import pathlib

            body = request_body({"name": "p"}, pathlib.Path(f.name), {"trials": 2})
            self.assertEqual(body["solution"], {"source": "class ModelNew: pass\n"})
            self.assertEqual(body["options"], {"trials": 2})
        finally:
            os.unlink(f.name)
        self.assertNotIn("options", request_body("p", "s", {}))
        with self.assertRaises(TypeError):
            request_body(19, "s", {})

    def test_evaluate_submits_then_long_polls_until_done(self):
        record = self.client.evaluate("level1/19_ReLU", "src", device="cpu", trials=2)
        self.assertEqual(record["verdict"], "correct")
        path, body = Fake.seen[0]
        self.assertEqual(path, "/v1/evaluations")
        self.assertEqual(body["options"], {"device": "cpu", "trials": 2})
        polls = [p for p, _ in Fake.seen[1:]]
        self.assertEqual(len(polls), Fake.polls_to_finish)
        self.assertTrue(all(p.startswith("/v1/evaluations/j0?wait=") for p in polls), polls)

    def test_a_failed_job_raises_with_the_reason(self):
        with self.assertRaises(KbvError) as e:
            self.client.evaluate("p", "FAIL")
        self.assertIn("attempts exhausted", str(e.exception))

    def test_errors_carry_the_status_and_the_servers_message(self):
        with self.assertRaises(KbvError) as e:
            Client(self.url, "wrong").submit("p", "s")
        self.assertEqual(e.exception.status, 401)
        self.assertEqual(e.exception.message, "wrong token")
        with self.assertRaises(KbvError) as e:
            self.client.status("nope")
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(KbvError) as e:
            Client("http://127.0.0.1:9", TOKEN, timeout=2).submit("p", "s")
        self.assertEqual(e.exception.status, 0)
        self.assertIn("no answer", e.exception.message)

    def test_evaluate_many_is_one_batch_and_keeps_the_order(self):
        records = self.client.evaluate_many([("p", "a"), ("p", "FAIL"), ("p", "c", {"trials": 1})], trials=3)
        self.assertEqual(Fake.seen[0][0], "/v1/batches")
        items = Fake.seen[0][1]["evaluations"]
        self.assertEqual([i["options"]["trials"] for i in items], [3, 3, 1])
        self.assertEqual(records[0]["job"], "j0")
        self.assertEqual(records[1], {"id": "j1", "error": "attempts exhausted"})
        self.assertEqual(records[2]["job"], "j2")

    def test_wait_gives_up_after_its_timeout(self):
        Fake.polls_to_finish = 10**9
        try:
            jid = self.client.submit("p", "s")
            with self.assertRaises(TimeoutError):
                self.client.wait(jid, timeout=0.5)
        finally:
            Fake.polls_to_finish = 2


class RewardTest(unittest.TestCase):
    @staticmethod
    def rec(verdict="correct", speedup=None):
        r = {"verdict": verdict}
        if speedup is not None:
            r["timing"] = {"speedup": {"tf32": speedup, "fp32": speedup * 2}}
        return r

    def test_zero_unless_correct(self):
        for v in ("wrong_output", "flaky", "compile_error", "rejected", "timeout", "crashed", None):
            self.assertEqual(reward(self.rec(v, 5.0)), 0.0, v)
        self.assertEqual(reward({}), 0.0)
        self.assertEqual(reward(None), 0.0)

    def test_log2_of_the_speedup_over_the_correct_bonus(self):
        self.assertAlmostEqual(reward(self.rec(speedup=1.0)), 1.0)
        self.assertAlmostEqual(reward(self.rec(speedup=4.0)), 3.0)
        self.assertAlmostEqual(reward(self.rec(speedup=0.25)), 0.1)  # floor: still above wrong ones
        self.assertAlmostEqual(reward(self.rec(speedup=2.0 ** 40)), 11.0)  # cap
        self.assertAlmostEqual(reward(self.rec(speedup=4.0), baseline="fp32"), 1.0 + 3.0)

    def test_shapes_and_untimed(self):
        self.assertAlmostEqual(reward(self.rec(speedup=3.0), shape="linear"), 3.0)
        self.assertAlmostEqual(reward(self.rec(speedup=1.5), shape="threshold", correct=0.5), 1.5)
        self.assertAlmostEqual(reward(self.rec(speedup=9.0), shape=math.sqrt, correct=0), 3.0)
        self.assertAlmostEqual(reward(self.rec(speedup=0.5), floor=0), 0.0)
        self.assertAlmostEqual(reward(self.rec()), 1.0)
        self.assertAlmostEqual(reward(self.rec(), untimed=0.3), 0.3)
        self.assertAlmostEqual(reward(self.rec(speedup=float("nan"))), 1.0)
        with self.assertRaises(ValueError):
            reward(self.rec(speedup=2.0), shape="cubic")


if __name__ == "__main__":
    unittest.main()
