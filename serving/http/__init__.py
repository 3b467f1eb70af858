"""The OpenAI-compatible HTTP front end of `gpuobs serve`, split as vLLM's OpenAI entrypoints are.

protocol (request bodies, the error answer) -> ingress (parse, validate, lease) -> generation (engine
events, detokenizer, request log line) -> responses (JSON and SSE); spans holds the request span; admin
the model list, hot-swap and fault routes; health the liveness and readiness answers; runtime the state
both front ends share; app the FastAPI application and `run_server`; drain the uvicorn server whose
SIGTERM drain answers every request that reached it; connections its read deadline and connection cap.
"""

from gpuobs.serving.http.app import create_app, run_server
from gpuobs.serving.http.protocol import ApiError
from gpuobs.serving.http.runtime import ServerConfig, ServingRuntime

__all__ = ["ApiError", "ServerConfig", "ServingRuntime", "create_app", "run_server"]
