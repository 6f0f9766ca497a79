#!/usr/bin/env python3
"""A chat-completions server on loopback that replays recorded answers, for kbv's tests.

  fake_chat_server.py --script SCRIPT.json --log LOG.jsonl --port-file PORT [--lifetime 120]

SCRIPT: {"routes": [{"match": "text in the last user message", "replies": [REPLY, ...]}, ...]}
The n-th request whose last user message contains a route's `match` (the first route that
matches) gets that route's n-th reply; the last reply repeats. A REPLY is
  {"content": "...", "reasoning_content": "...", "finish_reason": "stop", "usage": {...}}
  {"status": 429, "error": "rate limited", "headers": {"Retry-After": "0"}}
  {"raw": "text sent as the body with status 200"}
and any of them may carry "delay_s": seconds to wait before answering.
Every request is appended to LOG as one JSON line: path, headers (lowercase), body, route, reply.
The server listens on 127.0.0.1 only, on a free port written to PORT, and exits by itself after
--lifetime seconds.
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    args = ap.parse_args()
    with open(args.script) as f:
        script = json.load(f)
    lock = threading.Lock()
    counts = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            last_user = ""
            if isinstance(body, dict):
                for m in body.get("messages", []):
                    if m.get("role") == "user":
                        last_user = m.get("content", "")
            route_index, reply_index, reply = None, None, {"status": 404, "error": "no route matches"}
            with lock:
                for i, route in enumerate(script.get("routes", [])):
                    if route["match"] in last_user:
                        n = counts.get(i, 0)
                        counts[i] = n + 1
                        replies = route["replies"]
                        route_index, reply_index = i, min(n, len(replies) - 1)
                        reply = replies[reply_index]
                        break
                with open(args.log, "a") as log:
                    log.write(json.dumps({"path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": body, "route": route_index, "reply": reply_index,
                                          "time": time.time()}) + "\n")
            time.sleep(reply.get("delay_s", 0))
            status = reply.get("status", 200)
            headers = dict(reply.get("headers", {}))
            if "raw" in reply:
                data = reply["raw"].encode()
            elif status != 200:
                data = json.dumps({"error": {"message": reply.get("error", ""), "type": "test"}}).encode()
            else:
                message = {"role": "assistant", "content": reply.get("content")}
                if "reasoning_content" in reply:
                    message["reasoning_content"] = reply["reasoning_content"]
                data = json.dumps({
                    "id": "chatcmpl-test-%d-%d" % (route_index if route_index is not None else -1, reply_index or 0),
                    "object": "chat.completion",
                    "model": body.get("model", "") if isinstance(body, dict) else "",
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": reply.get("finish_reason", "stop")}],
                    "usage": reply.get("usage", {"prompt_tokens": 100, "completion_tokens": 50,
                                                 "total_tokens": 150}),
                }).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): expected in the timeout test

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
