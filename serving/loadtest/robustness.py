"""Robustness: random bad requests must each get a clear 4xx, never a crash, and leave the server healthy."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from gpuobs.serving.loadtest.client import Target, body_excerpt, error_message

__all__ = [
    "CATEGORIES",
    "BadRequest",
    "RobustnessReport",
    "bad_requests",
    "check_health",
    "run_robustness",
    "run_robustness_async",
]

logger = logging.getLogger(__name__)

# The bad inputs a serving API must refuse cleanly (issue: "Bad input").
CATEGORIES = (
    "malformed_json",
    "wrong_type",
    "negative_max_tokens",
    "huge_max_tokens",
    "empty_prompt",
    "oversized_prompt",
    "invalid_utf8",
    "unknown_model",
)

_COMPLETIONS = "/v1/completions"
_CHAT = "/v1/chat/completions"
_OVERSIZED_CHARS = 1_000_000       # beyond any context window served today


@dataclass(frozen=True)
class BadRequest:
    """One bad request: where it goes, its raw body and what is wrong with it."""

    category: str
    path: str
    body: bytes
    description: str
    content_type: str = "application/json"


def _dump(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _valid(path: str, model: str, rng: random.Random) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": rng.randint(1, 8), "stream": rng.random() < 0.5}
    if path == _COMPLETIONS:
        body["prompt"] = "hello there"
    else:
        body["messages"] = [{"role": "user", "content": "hello there"}]
    return body


def _prompt_key(path: str) -> str:
    return "prompt" if path == _COMPLETIONS else "messages"


def _with_prompt(body: dict[str, Any], path: str, text: str) -> dict[str, Any]:
    if path == _COMPLETIONS:
        body["prompt"] = text
    else:
        body["messages"] = [{"role": "user", "content": text}]
    return body


def _make(category: str, path: str, model: str, rng: random.Random) -> BadRequest:
    body = _valid(path, model, rng)
    if category == "malformed_json":
        good = _dump(body).decode()
        variants = [
            (good[: rng.randint(1, len(good) - 2)], "truncated JSON"),
            (good[:-1] + ",}", "trailing comma"),
            (good.replace('"', "'"), "single-quoted JSON"),
            ("model=" + model, "form text sent as JSON"),
            ("", "empty body"),
            ("[" * 100_000, "100000 nested unclosed arrays"),
        ]
        text, what = rng.choice(variants)
        return BadRequest(category, path, text.encode(), what)
    return _make_typed(category, path, body, rng)


def _make_typed(category: str, path: str, body: dict[str, Any], rng: random.Random) -> BadRequest:
    if category == "wrong_type":
        key = _prompt_key(path)
        fields: list[tuple[str, Any, str]] = [
            (key, 12345, f"{key} is a number"),
            (key, {"text": "hi"}, f"{key} is an object"),
            (key, True, f"{key} is a boolean"),
            (key, None, f"{key} is null"),
            ("max_tokens", "ten", "max_tokens is a string"),
            ("max_tokens", 2.5, "max_tokens is a fraction"),
            ("max_tokens", [4], "max_tokens is a list"),
            ("temperature", "hot", "temperature is a string"),
            ("stream", "yes please", "stream is a string"),
            ("model", 7, "model is a number"),
        ]
        if path == _CHAT:
            fields += [
                ("messages", [{"role": "user", "content": 42}], "message content is a number"),
                ("messages", [{"content": "hi"}], "message has no role"),
                ("messages", "hello", "messages is a string"),
            ]
        choice = rng.randrange(len(fields) + 2)
        if choice == len(fields):
            return BadRequest(category, path, _dump([body]), "body is a JSON array")
        if choice == len(fields) + 1:
            del body[key]
            return BadRequest(category, path, _dump(body), f"{key} is missing")
        field_name, value, what = fields[choice]
        body[field_name] = value
        return BadRequest(category, path, _dump(body), what)
    if category == "negative_max_tokens":
        body["max_tokens"] = -rng.choice([1, 2, 16, 1000, 2**31])
        return BadRequest(category, path, _dump(body), f"max_tokens={body['max_tokens']}")
    if category == "huge_max_tokens":
        body["max_tokens"] = rng.choice([10**7, 2**31, 2**63, 10**30])
        return BadRequest(category, path, _dump(body), f"max_tokens={body['max_tokens']}")
    if category == "empty_prompt":
        if path == _COMPLETIONS:
            body["prompt"] = rng.choice(["", []])
        else:
            body["messages"] = rng.choice([[], [{"role": "user", "content": ""}]])
        return BadRequest(category, path, _dump(body), "empty prompt")
    if category == "oversized_prompt":
        text = "a " * (_OVERSIZED_CHARS // 2)
        return BadRequest(category, path, _dump(_with_prompt(body, path, text)),
                          f"prompt of {_OVERSIZED_CHARS} characters")
    if category == "invalid_utf8":
        raw = rng.choice([b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80abc"])
        template = _dump(_with_prompt(body, path, "@@BAD@@"))
        if rng.random() < 0.5:
            return BadRequest(category, path, template.replace(b"@@BAD@@", raw),
                              f"prompt bytes {raw!r} are not UTF-8")
        # A lone surrogate escape: valid JSON syntax, but no Unicode text.
        return BadRequest(category, path, template.replace(b"@@BAD@@", b"\\ud800x"),
                          "prompt holds a lone surrogate \\ud800")
    if category == "unknown_model":
        body["model"] = f"no-such-model-{rng.randrange(10**6)}"
        return BadRequest(category, path, _dump(body), f"model {body['model']!r}")
    raise ValueError(f"unknown bad-request category {category!r}")


def bad_requests(n: int, model: str, seed: int = 0) -> list[BadRequest]:
    """n bad requests spread evenly over CATEGORIES (shuffled), to the completions and chat endpoints."""
    if n < 0:
        raise ValueError(f"number of bad requests must be >= 0, got {n}")
    rng = random.Random(seed)
    categories = [CATEGORIES[i % len(CATEGORIES)] for i in range(n)]
    rng.shuffle(categories)
    return [_make(c, rng.choice([_COMPLETIONS, _CHAT]), model, rng) for c in categories]


@dataclass
class RobustnessReport:
    """What the server answered to the bad requests, and whether it still serves afterwards."""

    total: int = 0
    clear_4xx: int = 0                   # a 4xx whose body carries an error message
    unclear_4xx: int = 0                 # a 4xx without a readable message
    accepted: int = 0                    # a 2xx/3xx: the bad input was not refused
    crashes: int = 0                     # 5xx or a dropped connection
    timeouts: int = 0                    # no answer in time: a hang counts against the server too
    statuses: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)     # the first few, for the report
    healthy_after: bool = False
    health_detail: str = ""

    @property
    def passed(self) -> bool:
        return (self.total == self.clear_4xx and self.crashes == 0 and self.timeouts == 0
                and self.healthy_after)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


async def check_health(
    client: httpx.AsyncClient, target: Target, timeout_s: float = 30.0
) -> tuple[bool, str]:
    """GET /health answers 200 and one small valid completion succeeds."""
    try:
        health = await client.get(target.base_url + "/health", timeout=timeout_s)
        if health.status_code != 200:
            return False, f"/health answered {health.status_code}"
        body = {"model": target.model, "prompt": "hello", "max_tokens": 2, "temperature": 0.0}
        answer = await client.post(target.base_url + "/v1/completions", json=body, headers=target.headers(),
                                   timeout=timeout_s)
        if answer.status_code != 200:
            return False, f"a valid completion answered {answer.status_code}: {body_excerpt(answer.content)}"
        choices = answer.json().get("choices")
        if not isinstance(choices, list) or not choices:
            return False, "a valid completion came back without choices"
        return True, "/health 200 and a valid completion answered"
    except (httpx.HTTPError, ValueError) as exc:
        return False, f"{type(exc).__name__}: {exc}"


async def run_robustness_async(
    target: Target,
    n: int,
    seed: int = 0,
    concurrency: int = 8,
    timeout_s: float = 30.0,
    on_progress: Callable[[int, int], None] | None = None,
    client: httpx.AsyncClient | None = None,
    max_failures_kept: int = 10,
) -> RobustnessReport:
    """Send n random bad requests (at most `concurrency` at once) and check every answer and health after."""
    requests = bad_requests(n, target.model, seed)
    report = RobustnessReport(total=len(requests))
    own_client = client is None
    # A fresh connection per bad request: a dropped connection is then the server's doing, never a race
    # with its keep-alive timer, and one answer cannot leave the next request on a poisoned connection.
    http = client if client is not None else httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=10.0), limits=httpx.Limits(max_keepalive_connections=0))
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    def record(bad: BadRequest, verdict: str, status: int | None, message: str | None) -> None:
        nonlocal done
        key = str(status) if status is not None else verdict
        report.statuses[key] = report.statuses.get(key, 0) + 1
        per_cat = report.by_category.setdefault(bad.category, {})
        per_cat[verdict] = per_cat.get(verdict, 0) + 1
        if verdict != "clear_4xx" and len(report.failures) < max_failures_kept:
            report.failures.append({"category": bad.category, "description": bad.description,
                                    "path": bad.path, "verdict": verdict, "status": status,
                                    "answer": (message or "")[:300]})
        done += 1
        if on_progress is not None:
            on_progress(done, len(requests))

    async def one(bad: BadRequest) -> None:
        async with gate:
            headers = {"Content-Type": bad.content_type, **target.headers()}
            try:
                response = await http.post(target.base_url + bad.path, content=bad.body, headers=headers,
                                           timeout=timeout_s)
            except httpx.TimeoutException as exc:
                report.timeouts += 1
                record(bad, "timeout", None, f"{type(exc).__name__}: {exc}")
                return
            except httpx.HTTPError as exc:
                report.crashes += 1
                record(bad, "crash", None, f"{type(exc).__name__}: {exc}")
                return
            status = response.status_code
            message = error_message(response.content)
            if status >= 500:
                report.crashes += 1
                record(bad, "crash", status, message or body_excerpt(response.content, 300))
            elif status >= 400 and message and "Traceback" not in response.text:
                report.clear_4xx += 1
                record(bad, "clear_4xx", status, message)
            elif status >= 400:
                report.unclear_4xx += 1
                record(bad, "unclear_4xx", status, body_excerpt(response.content, 300))
            else:
                report.accepted += 1
                record(bad, "accepted", status, body_excerpt(response.content, 300))

    try:
        await asyncio.gather(*(one(bad) for bad in requests))
        report.healthy_after, report.health_detail = await check_health(http, target, timeout_s)
    finally:
        if own_client:
            await http.aclose()
    logger.info("robustness: %d bad requests, %d clear 4xx, %d crashes, healthy after: %s", report.total,
                report.clear_4xx, report.crashes, report.healthy_after)
    return report


def run_robustness(target: Target, n: int, seed: int = 0, concurrency: int = 8,
                   timeout_s: float = 30.0) -> RobustnessReport:
    """Synchronous wrapper of run_robustness_async."""
    return asyncio.run(run_robustness_async(target, n, seed, concurrency, timeout_s))
