"""Ingress of the OpenAI routes: read and parse the body, lease the model, tokenize, validate parameters.

Everything here turns a bad request into an `ApiError` (4xx) before the engine sees it; the lease on the
served model is taken here and released by whoever answers (see responses.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from gpuobs.serving.errors import UnknownModelError
from gpuobs.serving.hotswap import ModelHandle
from gpuobs.serving.http.protocol import (
    CLIENT_CLOSED,
    UNSUPPORTED_NEUTRAL,
    ApiError,
    ChatMessage,
    CommonBody,
    CompletionBody,
    PreparedRequest,
    validation_message,
)
from gpuobs.serving.http.runtime import ServingRuntime
from gpuobs.serving.interface import TokenizerLike

__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "chat_prompt",
    "completion_prompt",
    "content_text",
    "encode",
    "json_object",
    "lease",
    "parse",
    "prepare",
    "read_body",
    "read_json",
    "refuse_unsupported",
]

MAX_CHARS_PER_TOKEN = 128  # more characters than this per token cannot fit: refused before tokenizing
OFF_LOOP_TOKENIZE_CHARS = 8192  # longer texts tokenize in a thread (tokenizers releases the GIL)

BodyT = TypeVar("BodyT", bound=BaseModel)


async def read_json(request: Request, max_body_bytes: int) -> dict[str, Any]:
    """The body as a JSON object: 413 past `max_body_bytes`, 400 for bad UTF-8, JSON or Unicode."""
    return json_object(await read_body(request, max_body_bytes))


async def read_body(request: Request, max_body_bytes: int) -> bytes:
    """The body's bytes: 413 past `max_body_bytes`; a cut upload is an ApiError the client never sees."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_body_bytes:
        raise ApiError(
            413,
            f"request body of {declared} bytes exceeds the limit of {max_body_bytes}",
            code="body_too_large",
        )
    raw = b""
    try:
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > max_body_bytes:
                raise ApiError(
                    413, f"request body exceeds the limit of {max_body_bytes} bytes", code="body_too_large"
                )
    except ClientDisconnect:  # a cut upload: nobody is left to answer, and nothing failed here
        raise ApiError(
            CLIENT_CLOSED, "the client closed the connection mid-body", code="client_closed"
        ) from None
    return raw


def json_object(raw: bytes) -> dict[str, Any]:
    """`raw` as a JSON object: 400 for bad UTF-8, JSON or Unicode, or for anything but an object."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, f"request body is not valid UTF-8 (byte {exc.start})", code="invalid_utf8"
        ) from None
    if not text.strip():
        raise ApiError(400, "request body is empty; send a JSON object", code="invalid_json")
    try:
        data = json.loads(text)
    except RecursionError:
        raise ApiError(400, "malformed JSON: nested too deeply", code="invalid_json") from None
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # an integer of more digits than Python converts
            raise ApiError(400, "malformed JSON: a number has too many digits", code="invalid_json") from None
        raise ApiError(
            400, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", code="invalid_json"
        ) from None
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object", code="invalid_json")
    try:  # JSON escapes can smuggle in lone surrogates, which are not text
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ApiError(
            400,
            f"request contains invalid Unicode: {exc.reason} (lone surrogate escape)",
            code="invalid_text",
        ) from None
    return data


def parse(model_cls: type[BodyT], data: dict[str, Any]) -> BodyT:
    """Validate a body against its model; a 400 naming the parameter otherwise."""
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        message, param = validation_message(exc)
        raise ApiError(400, message, param=param, code="invalid_type", reason="validation") from None


def lease(runtime: ServingRuntime, model: str) -> ModelHandle:
    """Lease the served engine for one request (503 while loading, 404 for another model's name)."""
    if not runtime.manager.ready:
        raise ApiError.unavailable("model is still loading; retry when /ready says ready", "not_ready", 1)
    try:
        return runtime.manager.acquire(model)
    except UnknownModelError as exc:
        raise ApiError(
            404,
            f"{exc} Served model: `{runtime.manager.served_name}`.",
            param="model",
            code="model_not_found",
            type_="not_found_error",
        ) from None


def completion_prompt(body: CompletionBody) -> str | list[int]:
    """The one prompt of a /v1/completions body (text or token ids); batches of prompts are refused."""
    prompt = body.prompt
    for nested in (list, str):
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], nested):
            if len(prompt) != 1:
                raise ApiError(
                    400,
                    "batched prompts are not supported; send one prompt per request",
                    param="prompt",
                    code="invalid_value",
                )
            prompt = prompt[0]
    if isinstance(prompt, str):
        return prompt
    ints = [t for t in prompt if isinstance(t, int)]
    return ints if len(ints) == len(prompt) else []


async def encode(handle: ModelHandle, text: str, param: str) -> list[int]:
    """Token ids of a text; refuses texts no tokenizer could fit in the context before tokenizing."""
    limit = handle.engine.max_model_len
    if len(text) > limit * MAX_CHARS_PER_TOKEN:
        raise ApiError(
            400,
            f"This model's maximum context length is {limit} tokens; the {param} has {len(text)} "
            "characters, far more than that. Shorten it.",
            param=param,
            code="context_length_exceeded",
        )
    tokenizer = handle.engine.tokenizer
    try:
        if len(text) > OFF_LOOP_TOKENIZE_CHARS:
            return list(await asyncio.to_thread(tokenizer.encode, text))
        return list(tokenizer.encode(text))
    except Exception as exc:  # e.g. lone surrogates from JSON escapes
        raise ApiError(400, f"{param} cannot be tokenized: {exc}", param=param, code="invalid_text") from None


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a chat message's content (text parts only)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise ApiError(
                400, "only text content parts are supported", param="messages", code="unsupported_content"
            )
        texts.append(part["text"])
    return "".join(texts)


def chat_prompt(tokenizer: TokenizerLike, messages: list[ChatMessage]) -> str:
    """The prompt text of a chat: the tokenizer's chat template if it has one, else a plain role layout."""
    if not any(content_text(m.content) for m in messages):
        raise ApiError(400, "messages have no content", param="messages", code="empty_prompt")
    apply = getattr(tokenizer, "apply_chat_template", None)
    plain = [{"role": m.role, "content": content_text(m.content)} for m in messages]
    if callable(apply):
        with contextlib.suppress(Exception):
            text = apply(plain)
            if isinstance(text, str):
                return text
    parts = [f"<|{m['role']}|>\n{m['content']}\n" for m in plain]
    return "".join(parts) + "<|assistant|>\n"


def refuse_unsupported(body: CommonBody) -> None:
    """400 for a sampling feature this server does not implement (logprobs, echo, penalties, ...) asked
    for with a value that changes the answer; its neutral values (what clients send by default) pass."""
    for name, neutral in UNSUPPORTED_NEUTRAL.items():
        value = getattr(body, name)
        if not any(_same_value(value, n) for n in neutral):
            raise ApiError(
                400,
                f"{name} is not supported by gpuobs serve (got {str(value)[:40]}); leave it out",
                param=name,
                code="unsupported_parameter",
            )


def _same_value(value: object, neutral: object) -> bool:
    """`value == neutral`, except that a bool matches only a bool: logprobs=0 asks for logprobs, false not."""
    if isinstance(value, bool) or isinstance(neutral, bool):
        return type(value) is type(neutral) and value == neutral
    return value == neutral


def _number(value: float | None, default: float, param: str) -> float:
    """A sampling parameter as a float; an integer too large for one (`1` and 400 zeros) is a 400, not the
    OverflowError of float()."""
    try:
        return default if value is None else float(value)
    except OverflowError:
        raise ApiError(400, f"{param} is too large", param=param, code="invalid_value") from None


def prepare(
    body: CommonBody,
    handle: ModelHandle,
    kind: str,
    prompt_ids: list[int],
    max_tokens: int | None,
    tenant_header: str | None,
) -> PreparedRequest:
    """Check the prompt against the model and every sampling parameter; 400 with the parameter otherwise."""
    refuse_unsupported(body)
    vocab = int(getattr(handle.engine.tokenizer, "vocab_size", 0) or 0)
    if not prompt_ids:
        raise ApiError(
            400, "prompt is empty: send at least one token of text", param="prompt", code="empty_prompt"
        )
    if vocab and any(t < 0 or t >= vocab for t in prompt_ids):
        raise ApiError(
            400, f"prompt token ids must be in [0, {vocab})", param="prompt", code="invalid_token_id"
        )
    limit = handle.engine.max_model_len
    if len(prompt_ids) >= limit:
        raise ApiError(
            400,
            f"This model's maximum context length is {limit} tokens; the prompt has "
            f"{len(prompt_ids)} tokens. Shorten the prompt.",
            param="prompt",
            code="context_length_exceeded",
        )
    # The parameter the client gave: chat takes max_completion_tokens (OpenAI's newer name) first.
    newer = getattr(body, "max_completion_tokens", None) is not None
    name = "max_completion_tokens" if newer else "max_tokens"
    if max_tokens is None:
        max_tokens = min(256, limit - len(prompt_ids))
    if max_tokens < 1:
        raise ApiError(400, f"{name} must be at least 1, got {max_tokens}", param=name, code="invalid_value")
    if len(prompt_ids) + max_tokens > limit:
        raise ApiError(
            400,
            f"This model's maximum context length is {limit} tokens. However, you "
            f"requested {len(prompt_ids) + max_tokens} tokens ({len(prompt_ids)} in the "
            f"prompt, {max_tokens} in the completion). Reduce {name} or the prompt.",
            param=name,
            code="context_length_exceeded",
        )
    temperature = _number(body.temperature, 1.0, "temperature")
    if not 0.0 <= temperature <= 2.0:
        raise ApiError(
            400,
            f"temperature must be between 0 and 2, got {temperature}",
            param="temperature",
            code="invalid_value",
        )
    top_p = _number(body.top_p, 1.0, "top_p")
    if not 0.0 < top_p <= 1.0:
        raise ApiError(400, f"top_p must be in (0, 1], got {top_p}", param="top_p", code="invalid_value")
    if body.n not in (None, 1):
        raise ApiError(400, "only n=1 is supported", param="n", code="invalid_value")
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    if len(stops) > 4 or any(not s for s in stops):
        raise ApiError(400, "stop takes up to 4 non-empty strings", param="stop", code="invalid_value")
    deadline = None
    if body.deadline_ms is not None:
        if body.deadline_ms <= 0:
            raise ApiError(400, "deadline_ms must be positive", param="deadline_ms", code="invalid_value")
        deadline = time.monotonic() + _number(body.deadline_ms, 0.0, "deadline_ms") / 1000.0
    tenant = tenant_header or body.user or "default"
    if len(tenant) > 64:
        raise ApiError(
            400,
            "tenant (x-tenant header or user) is longer than 64 characters",
            param="user",
            code="invalid_value",
        )
    return PreparedRequest(
        kind=kind,
        model=body.model,
        prompt_ids=prompt_ids,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=body.seed,
        stops=stops,
        stream=bool(body.stream),
        include_usage=bool((body.stream_options or {}).get("include_usage", False)),
        tenant=tenant,
        priority=int(body.priority or 0),
        deadline=deadline,
        ignore_eos=bool(body.ignore_eos),
    )
