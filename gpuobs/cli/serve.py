"""`gpuobs serve`: the reference LLM server (OpenAI-compatible HTTP, gRPC Predict, vLLM metrics)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gpuobs.errors import InputError
from gpuobs.user_input import require_http_url

__all__ = ["register"]

_EXAMPLE = """
Examples:

  gpuobs serve                                   # embedded tiny Llama on 127.0.0.1:8000
  gpuobs serve --model ./TinyLlama --port 8000 --grpc-port 50051 --supervise
  curl -s localhost:8000/v1/completions -d '{"model":"gpuobs-tiny-llama","prompt":"Hello","max_tokens":8}'

Needs the serving extra: pip install 'gpuobs[serving]' (make test installs it).

Exit codes: 0 stopped cleanly (SIGTERM or Ctrl-C included, after the drain), 1 the worker failed,
2 bad flags or input.
"""


def _engine_options(pairs: list[str]) -> dict[str, object]:
    """`-E KEY=VALUE` pairs as EngineConfig values of the field's own type; a bad key or value names the
    key and what it takes (else the model load fails later with a vague error)."""
    import dataclasses
    import typing

    from gpuobs.serving.engine import EngineConfig

    hints = typing.get_type_hints(EngineConfig)
    known = sorted(f.name for f in dataclasses.fields(EngineConfig) if f.name != "model_dir")
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"--engine-option takes KEY=VALUE, got {pair!r}")
        if key not in known:
            raise InputError(f"-E {key}: no such engine option (known: {', '.join(known)})")
        out[key] = _engine_value(key, raw.strip(), hints[key])
    try:
        EngineConfig(**out).check()  # type: ignore[arg-type]  # each value has its field's type
    except InputError as exc:
        raise InputError(f"-E {exc}") from None
    return out


def _engine_value(key: str, raw: str, hint: object) -> object:
    """`raw` as the type `hint` of EngineConfig field `key`; InputError names both when it is not one."""
    import types
    import typing

    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = type(None) in typing.get_args(hint)
    base = args[0] if isinstance(hint, types.UnionType) and len(args) == 1 else hint
    if optional and raw.lower() in ("none", ""):
        return None
    origin = typing.get_origin(base)
    try:
        if base is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1")
        if base in (int, float, str):
            return typing.cast(type, base)(raw)
        if origin is tuple:
            item = typing.get_args(base)[0]
            return tuple(item(x) for x in raw.split(","))
    except ValueError:
        pass
    else:
        if origin is not dict:
            raise InputError(f"-E {key}: not settable from the command line")
    shown = {bool: "true or false", int: "an integer", float: "a number", str: "text"}.get(
        typing.cast(type, base), "comma-separated numbers" if origin is tuple else str(base)
    )
    raise InputError(f"-E {key}={raw}: expected {shown}{' or none' if optional else ''}")


def _check_port_free(flag: str, address: str, port: int) -> None:
    """Bind the port once, as uvicorn and gRPC will, before the model loads: a port in use is one line and
    exit 2 (uvicorn would exit 3 after the load, gRPC would raise)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InputError(
                    f"{flag} {port}: {address}:{port} is already in use (another gpuobs serve?); "
                    f"stop it or pick another {flag}"
                ) from None
            reason = exc.strerror or exc
            raise InputError(f"{flag} {port}: cannot listen on {address}:{port} ({reason})") from None


def _announce(address: str, port: int, grpc_port: int | None, model: str | None, device: str) -> None:
    """One human line on stderr before the JSON logs: where to point a client, what it serves."""
    host = f"[{address}]" if ":" in address else address
    grpc = f", gRPC {host}:{grpc_port}" if grpc_port is not None else ""
    shown = model or "the embedded tiny Llama"
    sys.stderr.write(f"gpuobs serve: HTTP http://{host}:{port}/v1{grpc}; model {shown}; device {device}\n")
    if model is None:
        sys.stderr.write(
            "warning: the embedded default model has random weights, so its answers are noise (by design: "
            "it exercises the stack); --model DIR serves a real Hugging Face Llama\n"
        )
    sys.stderr.flush()


def _serve(
    model: Path | None = typer.Option(
        None,
        "--model",
        help="Hugging Face Llama directory (default: the embedded tiny model, created on first run).",
    ),
    served_model_name: str | None = typer.Option(
        None, "--served-model-name", help="Name clients pass as `model`."
    ),
    address: str = typer.Option("127.0.0.1", "--address", help="Listen address."),
    port: int = typer.Option(8000, "--port", help="HTTP port."),
    grpc_port: int | None = typer.Option(None, "--grpc-port", help="gRPC Predict port (off when unset)."),
    supervise: bool = typer.Option(
        False,
        "--supervise/--no-supervise",
        help="Run the worker as a child process and restart it with backoff when it crashes "
        "or its /health stays 503.",
    ),
    unhealthy_restart_s: float = typer.Option(
        30.0,
        "--unhealthy-restart-s",
        help="With --supervise: restart the worker once /health has answered 503 (engine dead, or a step "
        "past the stall budget, -E stall_budget_s) this many seconds in a row; 0 turns it off.",
    ),
    enable_fault_injection: bool = typer.Option(
        False, "--enable-fault-injection", help="Expose /admin/faults (chaos experiments only)."
    ),
    scheduler: str = typer.Option("bucketed", "--scheduler", help="bucketed | fifo_static."),
    device: str = typer.Option("auto", "--device", help="cpu | cuda | cuda:N | auto."),
    memory_budget_bytes: int | None = typer.Option(
        None,
        "--memory-budget-bytes",
        help="Device capacity on machines without a GPU: the hot-swap fit check's, and the simulated "
        "device's that the memory faults fill (on CUDA the device itself is read).",
    ),
    max_grpc_batch: int = typer.Option(64, "--max-grpc-batch", help="Most sequences in one Predict call."),
    engine_option: list[str] = typer.Option(
        [], "--engine-option", "-E", help="KEY=VALUE passed to EngineConfig (repeatable)."
    ),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning | error."),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="GPUOBS_API_KEY",
        show_envvar=True,
        help="Require `Authorization: Bearer KEY` on /v1/* and gRPC Predict (metadata `authorization`), "
        "as vLLM's --api-key; /admin/* then needs it too unless --admin-token is set.",
    ),
    admin_token: str | None = typer.Option(
        None,
        "--admin-token",
        envvar="GPUOBS_ADMIN_TOKEN",
        show_envvar=True,
        help="Require `Authorization: Bearer TOKEN` on /admin/* (hot-swap, faults); without it /admin/* "
        "takes the --api-key, and is open only when neither is set.",
    ),
    drain_timeout_s: float = typer.Option(
        20.0,
        "--drain-timeout-s",
        help="On SIGTERM/SIGINT, let requests in flight finish for this long; the rest end with an error "
        "event and a log line. Keep it below the pod's grace period (30 s in deploy/serving) minus ~9 s.",
    ),
    read_timeout_s: float = typer.Option(
        30.0,
        "--read-timeout-s",
        help="A request (headers and body) must arrive whole within this long after its first byte (or the "
        "connection opening); a slower client gets a 408 and the connection closes (slowloris).",
    ),
    max_connections: int = typer.Option(
        900,
        "--max-connections",
        help="Open HTTP connections past this get a 503 with Retry-After to their first request; keep it "
        "below the process's descriptor limit (ulimit -n).",
    ),
    otlp_endpoint: str | None = typer.Option(
        None, "--otlp-endpoint", help="Export spans over OTLP/HTTP to this URL."
    ),
) -> None:
    """Serve a Llama model over OpenAI-compatible HTTP (and gRPC Predict with --grpc-port)."""
    address_v, port_v, grpc_v, scheduler_v, device_v = address, port, grpc_port or None, scheduler, device
    model_v = str(model) if model else None
    from gpuobs.serving.model.loader import DEVICE_CHOICES, is_device_name, served_name_problem
    from gpuobs.serving.scheduler import SCHEDULERS

    if scheduler_v not in SCHEDULERS:
        raise InputError(f"--scheduler must be {' or '.join(SCHEDULERS)}, got {scheduler_v!r}")
    if not is_device_name(device_v):
        raise InputError(f"--device must be {DEVICE_CHOICES}, got {device_v!r}")
    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise InputError(f"--log-level must be debug, info, warning or error, got {log_level!r}")
    for name, value in (("--port", port_v), ("--grpc-port", grpc_v)):
        if value is not None and not 0 < value < 65536:
            raise InputError(f"{name} must be in 1..65535, got {value}")
    if grpc_v is not None and grpc_v == port_v:
        raise InputError("--grpc-port must differ from --port")
    if model_v is not None and not Path(model_v).exists():
        raise InputError(f"--model {model_v}: no such folder (expected a Hugging Face Llama directory)")
    if model_v is not None and not Path(model_v).is_dir():
        raise InputError(f"--model {model_v}: a file, not a folder (expected a Hugging Face Llama directory)")
    if model_v is not None and not (Path(model_v) / "config.json").is_file():
        raise InputError(f"--model {model_v}: no config.json there (expected a Hugging Face Llama directory)")
    if max_grpc_batch < 1:
        raise InputError("--max-grpc-batch must be at least 1")
    if not unhealthy_restart_s >= 0:
        raise InputError(f"--unhealthy-restart-s must be >= 0, got {unhealthy_restart_s}")
    if not 0 < drain_timeout_s <= 3600:
        raise InputError(f"--drain-timeout-s must be in (0, 3600], got {drain_timeout_s}")
    if not 0 < read_timeout_s <= 3600:
        raise InputError(f"--read-timeout-s must be in (0, 3600], got {read_timeout_s}")
    if max_connections < 1:
        raise InputError(f"--max-connections must be at least 1, got {max_connections}")
    if memory_budget_bytes is not None and memory_budget_bytes <= 0:
        raise InputError(f"--memory-budget-bytes must be positive, got {memory_budget_bytes}")
    name_problem = None if served_model_name is None else served_name_problem(served_model_name)
    if name_problem is not None:
        raise InputError(
            f"--served-model-name {name_problem}: leave it out to serve the model under its own name"
        )
    for flag, secret in (("--api-key", api_key), ("--admin-token", admin_token)):
        if secret is not None and not secret.strip():  # `--api-key "$KEY"` with KEY unset: not an open server
            raise InputError(f"{flag} is empty (an unset variable?): leave it out to serve without one")
    if otlp_endpoint is not None:
        require_http_url("--otlp-endpoint", otlp_endpoint, "http://otel-collector:4318")
    options = _engine_options(engine_option)
    _check_port_free("--port", address_v, port_v)
    if grpc_v is not None:
        _check_port_free("--grpc-port", address_v, grpc_v)

    from gpuobs.jsonlog import setup_logging

    setup_logging(log_level)
    if supervise:
        from gpuobs.serving.supervisor import HealthWatch, Supervisor, health_url

        # The worker must not supervise again, whatever the environment or the config file say.
        argv = [*(a for a in sys.argv[1:] if a != "--supervise"), "--no-supervise"]
        watch = None
        if unhealthy_restart_s > 0:
            watch = HealthWatch(health_url(address_v, port_v), unhealthy_after_s=unhealthy_restart_s)
        # -P: the working directory is not put on the worker's path, so a ./gpuobs folder cannot shadow us
        sup = Supervisor([sys.executable, "-P", "-m", "gpuobs", *argv], health=watch)
        sup.install_signal_handlers()
        code = sup.run()
        raise typer.Exit(code)

    from gpuobs.extras import require

    require("fastapi", "serving")
    require("uvicorn", "serving")
    if otlp_endpoint:
        from gpuobs.telemetry import configure_tracing

        configure_tracing("gpuobs-serve", otlp_endpoint=otlp_endpoint)
    from gpuobs.serving.http import ServerConfig, run_server
    from gpuobs.serving.model.loader import resolve_device

    device_v = resolve_device(device_v)  # `--device cuda` without a GPU: one line, before anything starts
    _announce(address_v, port_v, grpc_v, model_v, device_v)

    run_server(
        ServerConfig(
            model_dir=model_v,
            served_name=served_model_name,
            address=address_v,
            port=port_v,
            grpc_port=grpc_v,
            enable_fault_injection=enable_fault_injection,
            scheduler=scheduler_v,
            device=device_v,
            memory_budget_bytes=memory_budget_bytes,
            max_grpc_batch=max_grpc_batch,
            engine_options=options,
            log_level=log_level,
            api_key=api_key,
            admin_token=admin_token,
            drain_timeout_s=drain_timeout_s,
            read_timeout_s=read_timeout_s,
            max_connections=max_connections,
        )
    )


_serve.__doc__ = (_serve.__doc__ or "") + "\n" + _EXAMPLE


def register(app: typer.Typer) -> None:
    app.command("serve", help=(_serve.__doc__ or ""), no_args_is_help=False)(_serve)
