"""Probes of `gpuobs serve`: health, readiness, a golden completion within its SLO, deviation, recovery.

`service_healthy` is the steady-state check (the SLOs: /health and /ready answer 200, a greedy
completion answers 200 within `max_latency_s` with the same text as before the fault and, given a
`grpc_target`, a gRPC Predict answers within `max_latency_s` as its deadline). The waiting probes poll
it and mark the incident's `detected` and `recovered` phases for the game-day clock.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from chaoslib.exceptions import ActivityFailed
from prometheus_client.parser import text_string_to_metric_families

from gpuobs.chaos.httpjson import request_json, request_text
from gpuobs.chaos.incident import current
from gpuobs.chaos.safety import check_grpc_target, check_url
from gpuobs.chaos.serving.actions import DEFAULT_GRPC_TARGET, DEFAULT_URL, load_named

__all__ = [
    "counter_totals",
    "grpc_predict",
    "requests_lost",
    "service_healthy",
    "slo_violations",
    "wait_for_deviation",
    "wait_for_steady_state",
    "worker_pid",
]

logger = logging.getLogger("chaostoolkit")

_GOLDEN: dict[str, str] = {}
_GOLDEN_IDS = (72, 105, 33)  # "Hi!" in the tiny model's byte vocabulary: valid ids for any served model


def grpc_predict(
    grpc_target: str = DEFAULT_GRPC_TARGET,
    timeout_s: float = 2.0,
    model: str = "",
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float:
    """One gRPC Predict with `timeout_s` as its deadline; returns its latency in seconds.

    Fails with the gRPC status (DEADLINE_EXCEEDED, UNAVAILABLE, ...) when the call does not answer.
    `model` empty means the served model.
    """
    import grpc

    from gpuobs.serving.grpc_api import PredictClient

    target = check_grpc_target(grpc_target, configuration)
    t0 = time.perf_counter()
    try:
        with PredictClient(target) as client:
            client.predict([list(_GOLDEN_IDS)], model_name=model, timeout=timeout_s)
    except grpc.RpcError as exc:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
        raise ActivityFailed(
            f"gRPC Predict on {target}: {name} after {time.perf_counter() - t0:.2f} s "
            f"(deadline {timeout_s:.2f} s)"
        ) from None
    return round(time.perf_counter() - t0, 4)


def slo_violations(
    base_url: str = DEFAULT_URL,
    max_latency_s: float = 2.0,
    model: str = "gpuobs-tiny-llama",
    grpc_target: str | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """What breaks the serving SLOs right now (empty when healthy).

    Checks /health and /ready, then one greedy completion: its status, its latency against
    `max_latency_s`, and its text against the first healthy answer seen (a wrong tokenizer or corrupted
    weights change the text, not the status). With `grpc_target` (host:port of serve's --grpc-port),
    also one gRPC Predict with `max_latency_s` as its deadline.
    """
    base = check_url(base_url, configuration)
    problems = _http_violations(base, max_latency_s, model)
    if grpc_target and not problems:
        try:
            grpc_predict(grpc_target, max_latency_s, "", configuration)
        except ActivityFailed as exc:
            problems.append(str(exc))
    return problems


def _completion_text(body: Any) -> str | None:
    """The text of an OpenAI completion answer, or None when `body` is not one."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    text = first.get("text") if isinstance(first, dict) else None
    return text if isinstance(text, str) else None


def _http_violations(base: str, max_latency_s: float, model: str) -> list[str]:
    problems: list[str] = []
    for path in ("/health", "/ready"):
        try:
            status, body = request_json("GET", f"{base}{path}", timeout=max(1.0, max_latency_s))
        except ActivityFailed as exc:
            return [f"{path}: {exc}"]
        if status != 200:
            problems.append(f"{path} answered {status}: {body}")
    if problems:
        return problems
    t0 = time.perf_counter()
    body_in = {
        "model": model,
        "prompt": "golden prompt",
        "max_tokens": 8,
        "temperature": 0,
        "ignore_eos": True,
    }
    try:
        # over max_latency_s is a violation anyway: waiting longer only delays the detection
        status, body = request_json("POST", f"{base}/v1/completions", body_in, timeout=max_latency_s + 0.25)
    except ActivityFailed as exc:
        return [f"completion: {exc}"]
    latency = time.perf_counter() - t0
    if status != 200:
        return [f"completion answered {status}: {str(body)[:200]}"]
    text = _completion_text(body)
    if text is None:  # a login page, a proxy's placeholder: a 200 that serves nothing is no steady state
        shown = repr(str(body)[:200])
        return [f"completion answered 200 without a completion (is {base} a gpuobs serve?): {shown}"]
    if latency > max_latency_s:
        problems.append(f"completion took {latency:.2f} s > {max_latency_s:.2f} s")
    golden = _GOLDEN.setdefault(base, text)
    if text != golden:
        problems.append(f"completion text changed: {text!r} != {golden!r}")
    return problems


def service_healthy(
    base_url: str = DEFAULT_URL,
    max_latency_s: float = 2.0,
    model: str = "gpuobs-tiny-llama",
    grpc_target: str | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> bool:
    """True when every serving SLO holds (see slo_violations); the reasons are logged when not."""
    problems = slo_violations(base_url, max_latency_s, model, grpc_target, configuration)
    if problems:
        logger.info("serving SLOs violated: %s", "; ".join(problems))
        current().details["slo_violations"] = problems  # the game-day's report says why, not only that
    return not problems


def counter_totals(
    names: list[str],
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Each named counter (its exposed name, e.g. `vllm:num_preemptions_total`) summed over its series
    on serve's /metrics; 0 for a counter not exposed yet."""
    base = check_url(base_url, configuration)
    status, text = request_text("GET", f"{base}/metrics", timeout=10)
    if status != 200:
        raise ActivityFailed(f"{base}/metrics answered {status}")
    totals = dict.fromkeys(names, 0.0)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in totals:
                    totals[sample.name] += float(sample.value)
    except ValueError as exc:
        raise ActivityFailed(f"{base}/metrics is not Prometheus text: {exc}") from None
    return totals


def _counters_risen(
    base_url: str, before: dict[str, float], configuration: dict[str, Any] | None
) -> list[str]:
    if not before:
        return []
    now = counter_totals(list(before), base_url, configuration)
    return [f"{name} rose by {now[name] - before[name]:g}" for name in before if now[name] > before[name]]


def wait_for_deviation(
    base_url: str = DEFAULT_URL,
    timeout_s: float = 30.0,
    max_latency_s: float = 2.0,
    interval_s: float = 0.1,
    model: str = "gpuobs-tiny-llama",
    grpc_target: str | None = None,
    rising_counters: list[str] | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """Poll the SLOs until one is violated (the detection); returns the violations. Fails on timeout.

    `rising_counters` names serve counters whose growth is itself the symptom an on-call would page on
    (preemptions under a shrunken KV cache): a rise over their values when the probe starts counts as the
    deviation too, since a short golden request can still slip through a starved scheduler on time.
    """
    refused = current().no_fault_reason()
    if refused is not None:  # no fault went in: no deviation will come, however long one waits
        raise ActivityFailed(f"no fault went in ({refused}): nothing to detect")
    deadline = time.monotonic() + timeout_s
    before = counter_totals(rising_counters, base_url, configuration) if rising_counters else {}
    while time.monotonic() < deadline:
        # the counters first: a golden request stuck behind the fault blocks for up to its timeout
        problems = _counters_risen(base_url, before, configuration)
        problems = problems or slo_violations(base_url, max_latency_s, model, grpc_target, configuration)
        if problems:
            current().mark("detected", "; ".join(problems))
            return problems
        time.sleep(interval_s)
    raise ActivityFailed(f"no SLO deviation within {timeout_s:.0f} s of the fault")


def wait_for_steady_state(
    base_url: str = DEFAULT_URL,
    timeout_s: float = 60.0,
    max_latency_s: float = 2.0,
    interval_s: float = 0.1,
    model: str = "gpuobs-tiny-llama",
    grpc_target: str | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float:
    """Poll until every SLO holds again (the recovery); returns seconds since the fault. Fails on timeout."""
    deadline = time.monotonic() + timeout_s
    last: list[str] = []
    while time.monotonic() < deadline:
        last = slo_violations(base_url, max_latency_s, model, grpc_target, configuration)
        if not last:
            at = current().mark("recovered")
            fault = current().since_fault()
            return round(at - fault, 3) if fault is not None else 0.0
        time.sleep(interval_s)
    raise ActivityFailed(f"not steady {timeout_s:.0f} s later: {'; '.join(last)}")


def worker_pid(
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> int:
    """The serving worker's process id, from /health."""
    base = check_url(base_url, configuration)
    status, body = request_json("GET", f"{base}/health", timeout=5)
    if not isinstance(body, dict) or not isinstance(body.get("pid"), int):
        raise ActivityFailed(f"/health answered {status} without a pid")
    return int(body["pid"])


def requests_lost(
    name: str = "background",
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> int:
    """Stop the background load `name` and return how many accepted requests never got an answer."""
    gen = load_named(name)
    if gen is None:
        raise ActivityFailed(f"no background load named {name!r} (start it with serving.actions.start_load)")
    gen.stop()
    current().pop_undos(f"serving.load.{name}")
    counts = gen.counts()
    current().details.setdefault("load", counts)
    logger.info("background load %s: %s", name, counts)
    if counts["ok"] == 0:
        raise ActivityFailed(f"background load {name} got no answer at all: {counts}")
    return counts["lost"]
