"""The HTTP protocol of `gpuobs serve`: OpenAI request bodies, the error answer, and what a request becomes.

Request bodies use strict types (a string where a number belongs is a 400, as with OpenAI). Every error is
an `ApiError`, answered with OpenAI's error JSON `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from gpuobs.serving.errors import ServingError

__all__ = [
    "CLIENT_CLOSED",
    "FAILED_FINISH_REASONS",
    "READ_TIMED_OUT",
    "UNSUPPORTED_NEUTRAL",
    "ApiError",
    "ChatBody",
    "ChatMessage",
    "CommonBody",
    "CompletionBody",
    "LoadBody",
    "Outcome",
    "PreparedRequest",
    "validation_message",
]

CLIENT_CLOSED = 499
"""The status of a request whose client closed the connection before the server could answer (nginx's code):
never sent, it marks the request counted as aborted rather than as invalid or failed."""
READ_TIMED_OUT = "gpuobs.read_timed_out"
"""Scope key set on a request the read deadline cut (connections.py): its cut body is no client abort."""

FAILED_FINISH_REASONS = ("error", "deadline", "abort")
"""Finish reasons that end a request with an error answer instead of a completion."""


class ApiError(ServingError):
    """An error answered with OpenAI's error JSON; `reason` labels the invalid-request counter."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        message = message.encode("utf-8", "replace").decode("utf-8")  # never echo lone surrogates back
        super().__init__(message)
        self.status, self.message, self.type, self.param = status, message, type_, param
        self.code = code
        self.headers = headers or {}
        self.reason = reason or code or type_

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    @classmethod
    def unavailable(cls, message: str, code: str, retry_after_s: int | None = None) -> ApiError:
        """A 503 (the server cannot serve this now), with Retry-After when a retry may succeed."""
        headers = {"Retry-After": str(retry_after_s)} if retry_after_s is not None else None
        return cls(503, message, type_="service_unavailable", code=code, headers=headers)


Number = StrictFloat | StrictInt


class CommonBody(BaseModel):
    """Fields shared by /v1/completions and /v1/chat/completions (plus gpuobs' priority and deadline)."""

    model_config = ConfigDict(extra="ignore")

    model: StrictStr
    temperature: Number | None = None
    top_p: Number | None = None
    n: StrictInt | None = None
    seed: StrictInt | None = None
    stop: StrictStr | list[StrictStr] | None = None
    stream: StrictBool | None = False
    stream_options: dict[str, Any] | None = None
    user: StrictStr | None = None
    priority: StrictInt | None = 0
    ignore_eos: StrictBool | None = False
    deadline_ms: StrictInt | None = None
    # OpenAI sampling features this server does not implement: read only to refuse them when asked for
    # (`prepare`), so a client never gets an answer computed without what it asked.
    logprobs: Any = None
    top_logprobs: Any = None
    echo: Any = None
    best_of: Any = None
    logit_bias: Any = None
    presence_penalty: Any = None
    frequency_penalty: Any = None
    suffix: Any = None
    # vLLM's sampling extensions (which its clients and load tests send) this server does not implement
    # either: ignored, they answered with plain sampling as if applied.
    top_k: Any = None
    min_p: Any = None
    repetition_penalty: Any = None
    min_tokens: Any = None
    stop_token_ids: Any = None
    use_beam_search: Any = None


# Each unsupported feature with the values that ask for nothing (what OpenAI clients send by default).
UNSUPPORTED_NEUTRAL: dict[str, tuple[object, ...]] = {
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "echo": (None, False),
    "best_of": (None, 1),
    "logit_bias": (None, {}),
    "presence_penalty": (None, 0),
    "frequency_penalty": (None, 0),
    "suffix": (None, ""),
    "top_k": (None, -1, 0),
    "min_p": (None, 0),
    "repetition_penalty": (None, 1),
    "min_tokens": (None, 0),
    "stop_token_ids": (None, []),
    "use_beam_search": (None, False),
}


class CompletionBody(CommonBody):
    prompt: StrictStr | list[StrictStr] | list[StrictInt] | list[list[StrictInt]]
    max_tokens: StrictInt | None = 16


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: StrictStr | list[dict[str, Any]] | None = None


class ChatBody(CommonBody):
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_tokens: StrictInt | None = None
    max_completion_tokens: StrictInt | None = None


class LoadBody(BaseModel):
    """`POST /admin/models/load`: the model directory to swap to."""

    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = None
    name: StrictStr | None = None
    wait: StrictBool = False
    # bounded: a huge float overflows the wait below (issue 10 item 15); an hour is longer than any load
    timeout_s: Annotated[Number, Field(gt=0, le=3600)] = 300


_PARAMS = set(ChatBody.model_fields) | set(CompletionBody.model_fields) | set(LoadBody.model_fields)


def validation_message(exc: ValidationError) -> tuple[str, str | None]:
    """A one-line message and the parameter it is about, from pydantic's first error."""
    err = exc.errors()[0]
    loc = [str(p) for p in err.get("loc", ()) if not isinstance(p, int)]
    # drop pydantic's union-branch names ("str", "list[int]") from the path
    param = next((p for p in loc if p in _PARAMS), loc[0] if loc else None)
    return f"{param or 'body'}: {err.get('msg', 'invalid value')}", param


@dataclass
class PreparedRequest:
    """A validated request, ready for the engine."""

    kind: str  # "text_completion" | "chat"
    model: str
    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stops: list[str]
    stream: bool
    include_usage: bool
    tenant: str
    priority: int
    deadline: float | None
    ignore_eos: bool


@dataclass
class Outcome:
    """How a generation ended: its text, finish reason, token counts and error (if any)."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.finish_reason in FAILED_FINISH_REASONS

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
