"""One streamed request to an OpenAI-compatible server, timed per SSE chunk (TTFT, inter-token gaps)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import httpx

from gpuobs.http_body import body_excerpt
from gpuobs.json_input import loads
from gpuobs.serving.loadtest.prompts import PlannedRequest
from gpuobs.serving.loadtest.stats import RequestResult
from gpuobs.user_input import http_url_problem, url_without_credentials

__all__ = [
    "Endpoint",
    "Target",
    "body_excerpt",
    "error_message",
    "fetch_model",
    "normalize_base_url",
    "request_body",
    "resolve_target",
    "stream_request",
]

logger = logging.getLogger(__name__)

_MAX_ERROR_BODY = 64 * 1024


class Endpoint(StrEnum):
    """Which OpenAI API the load goes through."""

    COMPLETIONS = "completions"
    CHAT = "chat"

    @property
    def path(self) -> str:
        return "/v1/completions" if self is Endpoint.COMPLETIONS else "/v1/chat/completions"


@dataclass(frozen=True)
class Target:
    """The server under load: base URL (no `/v1`), the model name and how requests are sent."""

    base_url: str
    model: str
    endpoint: Endpoint = Endpoint.COMPLETIONS
    api_key: str | None = None
    include_usage: bool = True           # ask for a final usage chunk (stream_options.include_usage)
    extra_body: dict[str, Any] = field(default_factory=dict)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


def normalize_base_url(url: str) -> str:
    """`http://host:port[/prefix]` without a trailing slash or `/v1`; ValueError for anything else."""
    problem = http_url_problem(url)
    if problem is not None:
        shown = url_without_credentials(url)
        raise ValueError(f"{shown!r} is not an http(s) URL ({problem}); expected e.g. http://127.0.0.1:8000")
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def error_message(body: bytes) -> str | None:
    """The human message of an error answer in the usual shapes (OpenAI, FastAPI, plain), else None."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    candidates: list[Any] = []
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            candidates.append(err.get("message"))
        candidates += [err, data.get("message"), data.get("detail")]
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
        if isinstance(candidate, list) and candidate:     # FastAPI validation errors: [{"msg": ...}, ...]
            msgs = [str(c["msg"]) for c in candidate if isinstance(c, dict) and isinstance(c.get("msg"), str)]
            if msgs:
                return "; ".join(msgs)
    return None


def request_body(target: Target, planned: PlannedRequest) -> dict[str, Any]:
    """The JSON body of one streamed, greedy request."""
    body: dict[str, Any] = {
        "model": target.model,
        "max_tokens": planned.max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    if target.endpoint is Endpoint.COMPLETIONS:
        body["prompt"] = planned.prompt
    else:
        body["messages"] = [{"role": "user", "content": planned.prompt}]
    if target.include_usage:
        body["stream_options"] = {"include_usage": True}
    body.update(target.extra_body)
    return body


def _chunk_text(choice: dict[str, Any], endpoint: Endpoint) -> str | None:
    if endpoint is Endpoint.COMPLETIONS:
        text = choice.get("text")
    else:
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
    return text if isinstance(text, str) else None


async def stream_request(
    client: httpx.AsyncClient,
    target: Target,
    planned: PlannedRequest,
    result: RequestResult,
    t0: float,
    timeout_s: float,
) -> None:
    """Send `planned` streaming and fill `result` in place (times relative to t0, perf_counter clock).

    A chunk counts as one token when it carries text, or empty text without a finish reason (a byte
    that does not complete a UTF-8 character yet); a final usage chunk, when the server sends one,
    overrides the count.
    """
    url = target.base_url + target.endpoint.path
    body = request_body(target, planned)
    result.sent = time.perf_counter() - t0
    saw_end = False
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("POST", url, json=body, headers=target.headers()) as response:
                result.status = response.status_code
                if response.status_code != 200:
                    raw = b""
                    async for piece in response.aiter_bytes():
                        raw += piece
                        if len(raw) > _MAX_ERROR_BODY:
                            break
                    result.outcome = "rejected" if response.status_code == 429 else "http_error"
                    result.error = (error_message(raw) or body_excerpt(raw))[:500]
                    result.finished = time.perf_counter() - t0
                    return
                usage_tokens: int | None = None
                first_other: str | None = None  # the first line that is not an event: what came instead
                content_type = response.headers.get("content-type", "no content type")
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        event_field = line.startswith((":", "event:", "id:", "retry:"))
                        if first_other is None and line.strip() and not event_field:
                            first_other = line
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        saw_end = True
                        break
                    now = time.perf_counter() - t0
                    chunk = json.loads(payload)
                    if not isinstance(chunk, dict):
                        raise ValueError(f"SSE chunk is not an object: {payload[:80]}")
                    if "error" in chunk:
                        result.outcome = "stream_error"
                        result.error = str(error_message(payload.encode()) or chunk["error"])[:500]
                        result.finished = now
                        return
                    usage = chunk.get("usage")
                    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                        usage_tokens = usage["completion_tokens"]
                        if isinstance(usage.get("prompt_tokens"), int):
                            result.prompt_tokens = usage["prompt_tokens"]
                    choices = chunk.get("choices")
                    for choice in choices if isinstance(choices, list) else []:
                        if not isinstance(choice, dict):
                            continue
                        text = _chunk_text(choice, target.endpoint)
                        finish = choice.get("finish_reason")
                        if finish:
                            saw_end = True
                        if text or (text == "" and not finish):
                            if result.first_token is None:
                                result.first_token = now
                            result.chunk_times.append(now)
                            result.output_tokens += 1
                if usage_tokens is not None:
                    result.output_tokens = usage_tokens
        result.finished = time.perf_counter() - t0
        if saw_end:
            result.outcome = "ok"
        elif result.first_token is None and first_other is not None:  # a page, not an event stream
            result.outcome = "stream_error"
            result.error = (
                f"answered 200 with {content_type}, not a stream of server-sent events: "
                f"{body_excerpt(first_other.encode())!r}"
            )[:500]
        else:
            result.outcome = "stream_error"
            result.error = "stream ended without [DONE] or a finish_reason"
    except TimeoutError:
        result.outcome = "timeout"
        result.error = f"no complete answer within {timeout_s:g} s"
    except httpx.TimeoutException as exc:
        result.outcome = "timeout"
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    except httpx.HTTPError as exc:                # connect/read/protocol errors: the server dropped us
        result.outcome = "connection_error"
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    except ValueError as exc:                     # a chunk that is not JSON
        result.outcome = "stream_error"
        result.error = f"bad SSE chunk: {exc}"[:500]


def _refuse_unauthorized(response: httpx.Response, base_url: str, api_key: str | None) -> None:
    if response.status_code in (401, 403):
        hint = "the API key was refused" if api_key else "the server wants an API key (--api-key)"
        raise ValueError(f"GET {base_url}/v1/models answered {response.status_code}: {hint}")


def _json_answer(response: httpx.Response, what: str) -> Any:
    """The JSON of a 200 answer, or a ValueError saying the server is not what the URL was taken for (a
    proxy's login page, a web server's index): "Expecting value: line 1 column 1" said nothing of it."""
    try:
        return loads(response.content)
    except ValueError:  # JSONDecodeError, NestedTooDeeply
        kind = response.headers.get("content-type", "no content type")
        raise ValueError(
            f"{what} answered 200 with {kind}, not JSON (is it an OpenAI-compatible server?): "
            f"{body_excerpt(response.content)!r}"
        ) from None


async def fetch_model(client: httpx.AsyncClient, base_url: str, api_key: str | None = None) -> str:
    """The id of the first model listed by GET /v1/models; ValueError when there is none."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = await client.get(base_url + "/v1/models", headers=headers)
    _refuse_unauthorized(response, base_url, api_key)
    if response.status_code != 200:
        raise ValueError(f"GET {base_url}/v1/models answered {response.status_code}")
    listing = _json_answer(response, f"GET {base_url}/v1/models")
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):  # a JSON list or number "answered" too: not OpenAI's model list
        shown = body_excerpt(response.content)
        raise ValueError(f"GET {base_url}/v1/models answered 200 without a model list: {shown!r}")
    ids = [m.get("id") for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if not ids:
        raise ValueError(f"GET {base_url}/v1/models lists no model")
    return str(ids[0])


def resolve_target(
    url: str,
    model: str | None = None,
    endpoint: Endpoint = Endpoint.COMPLETIONS,
    api_key: str | None = None,
    include_usage: bool = True,
    extra_body: dict[str, Any] | None = None,
    timeout_s: float = 10.0,
) -> Target:
    """A Target for `url`; asks the server for its model when none is given.

    ValueError with a one-line reason when the URL is not http(s), the server cannot be reached or it
    lists no model.
    """
    base = normalize_base_url(url)

    async def ask() -> str:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            try:
                if model:       # still make sure something answers there before offering it load
                    headers = Target(base, model, api_key=api_key).headers()
                    response = await client.get(base + "/v1/models", headers=headers)
                    _refuse_unauthorized(response, base, api_key)
                    if response.status_code == 200:  # a server without /v1/models may answer 404: fine
                        _json_answer(response, f"GET {base}/v1/models")
                    return model
                return await fetch_model(client, base, api_key)
            except httpx.TimeoutException:  # str() of httpx's ReadTimeout is empty: "ReadTimeout: "
                raise ValueError(f"cannot reach {base}: no answer within {timeout_s:g} s") from None
            except httpx.HTTPError as exc:
                raise ValueError(f"cannot reach {base}: {type(exc).__name__}: {exc}") from exc

    name = asyncio.run(ask())
    return Target(base, name, endpoint, api_key, include_usage, dict(extra_body or {}))
