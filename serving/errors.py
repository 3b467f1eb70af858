"""Error classes of the serving stack, all under the component's base `gpuobs.errors.ServingError`.

A `ServingError` is a runtime condition of the server (a full queue, a dead engine, a refused swap), not a
usage error: if one ever reaches the CLI it exits 1, while `gpuobs.errors.InputError` (a bad flag, option
or model directory) stays the exit-2 usage error. The HTTP and gRPC layers map each class to a status.
"""

from __future__ import annotations

from gpuobs.errors import ServingError

__all__ = [
    "EngineClosedError",
    "EngineUnhealthyError",
    "FaultNotEnabledError",
    "InvalidRequestError",
    "NoFreeBlocksError",
    "QueueFullError",
    "ServingError",
    "SwapInProgressError",
    "SwapRefusedError",
    "UnknownModelError",
]


class QueueFullError(ServingError):
    """Admission refused: the request's queue is full. Retry after `retry_after_s` seconds (HTTP 429)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class InvalidRequestError(ServingError):
    """The request cannot be served as given (too long, bad parameter...): an HTTP 400."""


class EngineClosedError(ServingError):
    """The engine is stopping or stopped and takes no new requests (an HTTP 503)."""


class EngineUnhealthyError(ServingError):
    """The engine is dead or stalled past its budget; `reason` says which (an HTTP 503, not a hang)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FaultNotEnabledError(ServingError):
    """Fault injection was asked for but the engine was started without it."""


class SwapRefusedError(ServingError):
    """The new model would not fit (or the request to swap is otherwise impossible)."""


class SwapInProgressError(ServingError):
    """Another swap is loading; one at a time."""


class UnknownModelError(ServingError):
    """A request named a model that is not served."""


class NoFreeBlocksError(ServingError):
    """The KV cache has not enough free blocks for the request (the scheduler preempts on this)."""
