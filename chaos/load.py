"""Background load on an OpenAI-style endpoint that classifies every request: ok, error, refused or lost.

A request is *accepted* once the server took the connection and the request was sent. An accepted
request that never gets a complete answer (connection reset, worker killed) is *lost*; one refused
before that (connection refused, 503 while draining or loading) is *refused*, which a client retries
safely. Each outcome is kept with its time and latency, for the game-day's P99 and error-rate curves.
`GrpcLoadGenerator` does the same with gRPC Predict calls that carry a deadline, as real clients set one.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

__all__ = ["GrpcLoadGenerator", "LoadGenerator", "Sample", "percentile"]

logger = logging.getLogger("chaostoolkit")


@dataclass(frozen=True)
class Sample:
    """One request: when it started (epoch s), how long it took, and what became of it."""

    start: float
    latency_s: float
    outcome: str  # ok | error | refused | lost
    status: int = 0


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


class LoadGenerator:
    """`concurrency` client threads sending completions back to back, `interval_s` apart each."""

    def __init__(
        self,
        base_url: str,
        model: str = "gpuobs-tiny-llama",
        concurrency: int = 2,
        max_tokens: int = 8,
        interval_s: float = 0.2,
        timeout_s: float = 30.0,
        ignore_eos: bool = False,
        prompt: str = "chaos probe",
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        self.model = model
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.ignore_eos = ignore_eos  # every completion runs to max_tokens: a steady KV cache demand
        self.prompt = prompt
        self.samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def one(self) -> Sample:
        """Send one completion and classify what happened."""
        request = {"model": self.model, "prompt": self.prompt, "max_tokens": self.max_tokens}
        if self.ignore_eos:
            request["ignore_eos"] = True
        body = json.dumps(request)
        start = time.time()
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            try:
                conn.connect()
                conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            except OSError:
                return Sample(start, time.perf_counter() - t0, "refused")
            try:
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                return Sample(start, time.perf_counter() - t0, "lost")
            status = int(resp.status)
            if status == 200:
                outcome = "ok"
            elif status == 503:
                outcome = "refused"
            else:
                outcome = "error"
            return Sample(start, time.perf_counter() - t0, outcome, status)
        finally:
            conn.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            sample = self.one()
            with self._lock:
                self.samples.append(sample)
            self._stop.wait(self.interval_s)

    def start(self) -> LoadGenerator:
        for i in range(self.concurrency):
            thread = threading.Thread(target=self._loop, name=f"chaos-load-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout_s: float | None = None) -> list[Sample]:
        """Stop sending and wait for the requests in flight; returns every sample."""
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout_s + 5 if timeout_s is None else timeout_s)
        return self.snapshot()

    def snapshot(self) -> list[Sample]:
        with self._lock:
            return list(self.samples)

    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "error": 0, "refused": 0, "lost": 0}
        for sample in self.snapshot():
            out[sample.outcome] += 1
        return out


class GrpcLoadGenerator(LoadGenerator):
    """`concurrency` clients calling gRPC Predict back to back, `interval_s` apart, each with `deadline_s`.

    A call answered is *ok*; UNAVAILABLE (nothing listening, server going away) is *refused*; any
    other status (DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ...) is an *error*, kept with its status name.
    """

    def __init__(
        self,
        target: str,
        model: str = "",
        concurrency: int = 2,
        deadline_s: float = 1.0,
        interval_s: float = 0.2,
        input_ids: tuple[int, ...] = (72, 105, 33),
    ) -> None:
        super().__init__("http://127.0.0.1", model=model, concurrency=concurrency, interval_s=interval_s)
        self.target = target
        self.timeout_s = deadline_s
        self.input_ids = list(input_ids)
        self.codes: dict[str, int] = {}
        self._client: Any = None

    def _predict_client(self) -> Any:
        with self._lock:
            if self._client is None:
                from gpuobs.serving.grpc_api import PredictClient

                self._client = PredictClient(self.target)
            return self._client

    def one(self) -> Sample:
        """Send one Predict with the deadline and classify what happened."""
        import grpc

        start = time.time()
        t0 = time.perf_counter()
        try:
            self._predict_client().predict([self.input_ids], model_name=self.model, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
            with self._lock:
                self.codes[name] = self.codes.get(name, 0) + 1
            outcome = "refused" if name == "UNAVAILABLE" else "error"
            return Sample(start, time.perf_counter() - t0, outcome)
        return Sample(start, time.perf_counter() - t0, "ok")

    def stop(self, timeout_s: float | None = None) -> list[Sample]:
        samples = super().stop(timeout_s)
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        return samples
