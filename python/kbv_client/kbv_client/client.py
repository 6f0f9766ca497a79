"""HTTP client of kbv serve's API (docs/SERVICE.md) and the reward helper."""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

Problem = Union[str, "os.PathLike[str]", Mapping[str, str]]
Solution = Union[str, "os.PathLike[str]", Mapping[str, str]]


class KbvError(Exception):
    """An answer other than success: `status` is the HTTP status (0: no answer), `message` the
    server's error message (or why there was no answer), `body` the JSON body when there was one."""

    def __init__(self, status: int, message: str, body: Optional[dict] = None):
        super().__init__(f"kbv serve: {status}: {message}" if status else f"kbv serve: {message}")
        self.status = status
        self.message = message
        self.body = body


def _problem(problem: Problem) -> dict:
    """{"name"} or {"source"}: a mapping as is; a path (os.PathLike) is read as source; a string
    with a newline is source, any other string a name ("level1/19_ReLU")."""
    if isinstance(problem, Mapping):
        return dict(problem)
    if isinstance(problem, os.PathLike):
        with open(problem, encoding="utf-8") as f:
            return {"source": f.read()}
    if isinstance(problem, str):
        return {"source": problem} if "\n" in problem else {"name": problem}
    raise TypeError(f"problem: expected a name, a source, a path or a mapping, got {type(problem).__name__}")


def _solution(solution: Solution) -> dict:
    """{"source"}: a string is the source (Python, or a model's raw Markdown answer), a path is read."""
    if isinstance(solution, Mapping):
        return dict(solution)
    if isinstance(solution, os.PathLike):
        with open(solution, encoding="utf-8") as f:
            return {"source": f.read()}
    if isinstance(solution, str):
        return {"source": solution}
    raise TypeError(f"solution: expected a source, a path or a mapping, got {type(solution).__name__}")


def request_body(problem: Problem, solution: Solution, options: Mapping[str, Any]) -> dict:
    """The JSON body of POST /v1/evaluations."""
    body = {"problem": _problem(problem), "solution": _solution(solution)}
    if options:
        body["options"] = dict(options)
    return body


class Client:
    """`Client(url, token)`: one kbv serve. Thread-safe (each call opens its own connection).

    evaluate() submits and waits for the record; evaluate_many() does many at once (one batch
    request, then concurrent long-polls). Options are kbv eval's flags with underscores
    (docs/SERVICE.md, "Options"): device, protocol, trials, flaky_reruns, precision, tolerance,
    seed, policy, timing, rse, time_cap, timing_sets, timing_inputs, flush_bytes, launch_hold_us,
    timing_pairs, baseline_worker, cpu_threads, baselines, timeout_build, timeout_load, timeout_call, fast_build."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, poll_wait: float = 30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout      # seconds for one HTTP exchange (plus the long-poll's wait)
        self.poll_wait = poll_wait  # seconds one long-poll asks the server to wait

    # -- HTTP ---------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Optional[dict] = None, wait: float = 0.0) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                parsed = json.loads(raw)
                message = parsed.get("error", {}).get("message", raw.decode(errors="replace"))
            except (ValueError, AttributeError):
                parsed, message = None, raw.decode(errors="replace")
            raise KbvError(e.code, message, parsed) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise KbvError(0, f"no answer from {self.url}: {reason}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise KbvError(0, f"{method} {path}: the answer is not JSON: {raw[:200]!r}") from None

    # -- the API ------------------------------------------------------------------------------
    def submit(self, problem: Problem, solution: Solution, **options: Any) -> str:
        """Queues one evaluation; its id. A pair already evaluated with the same options is done at once."""
        return self._call("POST", "/v1/evaluations", request_body(problem, solution, options))["id"]

    def submit_batch(self, pairs: Iterable[Union[Sequence, Mapping]], **options: Any) -> list:
        """Queues many: each item is (problem, solution), (problem, solution, {options}) or a full
        request body; `options` apply to every item (an item's own win). All or nothing: one bad
        item and none is queued (KbvError names it). The ids, in order."""
        items = []
        for p in pairs:
            if isinstance(p, Mapping):
                items.append(dict(p))
                continue
            own = dict(options)
            if len(p) == 3:
                own.update(p[2])
            elif len(p) != 2:
                raise ValueError("a batch item is (problem, solution) or (problem, solution, options)")
            items.append(request_body(p[0], p[1], own))
        return self._call("POST", "/v1/batches", {"evaluations": items})["ids"]

    def status(self, evaluation_id: str, wait: float = 0.0) -> dict:
        """{"id", "status": queued|running|done|failed, "record" (done), "error" (failed)}; with
        `wait`, the server holds the answer up to that many seconds until the job ends."""
        q = f"?wait={wait:g}" if wait > 0 else ""
        return self._call("GET", f"/v1/evaluations/{urllib.parse.quote(evaluation_id, safe='')}{q}", wait=wait)

    def wait(self, evaluation_id: str, timeout: Optional[float] = None) -> dict:
        """Long-polls until the evaluation is done or failed; its last status. TimeoutError after
        `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = self.poll_wait if deadline is None else min(self.poll_wait, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError(f"evaluation {evaluation_id} not finished after {timeout} s")
            st = self.status(evaluation_id, wait=left)
            if st["status"] in ("done", "failed"):
                return st

    def _record(self, st: dict) -> dict:
        if st["status"] != "done":
            raise KbvError(0, f"evaluation {st['id']} failed: {st.get('error', '')}", st)
        return st["record"]

    def evaluate(self, problem: Problem, solution: Solution, timeout: Optional[float] = None, **options: Any) -> dict:
        """One evaluation, waited for: the record (`kbv eval --json`'s). A job that failed
        (no record: attempts exhausted) raises KbvError."""
        return self._record(self.wait(self.submit(problem, solution, **options), timeout))

    def evaluate_many(self, pairs: Iterable[Union[Sequence, Mapping]], timeout: Optional[float] = None,
                      max_workers: int = 16, **options: Any) -> list:
        """Many evaluations: one batch request, then up to `max_workers` concurrent long-polls.
        The records in the order of `pairs`; a failed job's place holds {"error": ..., "id": ...}."""
        ids = self.submit_batch(list(pairs), **options)

        def one(i: str) -> dict:
            st = self.wait(i, timeout)
            return st["record"] if st["status"] == "done" else {"id": i, "error": st.get("error", "failed")}

        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(ids)))) as pool:
            return list(pool.map(one, ids))

    def health(self) -> dict:
        return self._call("GET", "/healthz")

    def metrics(self) -> str:
        """The Prometheus text of GET /metrics."""
        req = urllib.request.Request(self.url + "/metrics")
        req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return res.read().decode()
        except urllib.error.HTTPError as e:
            raise KbvError(e.code, e.read().decode(errors="replace")) from None


def _speedup(record: Mapping, baseline: str) -> Optional[float]:
    s = ((record.get("timing") or {}).get("speedup") or {}).get(baseline)
    return float(s) if isinstance(s, (int, float)) and math.isfinite(s) and s > 0 else None


def reward(record: Mapping, baseline: str = "tf32", shape: Union[str, Callable[[float], float]] = "log2",
           correct: float = 1.0, cap: float = 10.0, floor: float = 0.1, untimed: Optional[float] = None) -> float:
    """A scalar reward from a record (docs/SERVICE.md, "Reward"):

        0                                             unless record["verdict"] == "correct"
        max(floor, correct + min(cap, f(speedup)))    otherwise, speedup = timing.speedup[baseline]
        untimed (default: correct)                    correct but not timed (timing off, or failed)

    f is `shape`: "log2" (log2 s: 0 at parity, +1 per doubling, negative when slower), "linear"
    (s - 1), "threshold" (1 if s > 1 else 0), or any callable of the speedup. `floor` keeps every
    correct candidate above every incorrect one (set it to 0 to let slow ones sink to 0). A
    record that is not a mapping, or has no verdict, is worth 0."""
    if not isinstance(record, Mapping) or record.get("verdict") != "correct":
        return 0.0
    s = _speedup(record, baseline)
    if s is None:
        return float(correct if untimed is None else untimed)
    if callable(shape):
        g = float(shape(s))
    elif shape == "log2":
        g = math.log2(s)
    elif shape == "linear":
        g = s - 1.0
    elif shape == "threshold":
        g = 1.0 if s > 1.0 else 0.0
    else:
        raise ValueError(f"shape: log2, linear, threshold or a callable, got {shape!r}")
    return max(float(floor), float(correct) + min(float(cap), g))
