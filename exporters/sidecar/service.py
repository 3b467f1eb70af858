"""`gpuobs export` as a library: backend, core, collector, HTTP server, pod attribution, OTLP push.

`Exporter(ExporterConfig(...)).start()` runs everything in background threads and returns; `stop()` undoes
it. The CLI, the demo, the benchmark and the tests all start the exporter through this one class.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import Any

from prometheus_client.registry import CollectorRegistry

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.backend import GpuBackend
from gpuobs.exporters.sidecar.collector import NAMINGS, GpuCollector
from gpuobs.exporters.sidecar.core import CoreSettings, ExporterCore
from gpuobs.exporters.sidecar.fields import FIELDS
from gpuobs.exporters.sidecar.server import ExporterHttpServer
from gpuobs.telemetry import node_name

__all__ = [
    "BACKENDS",
    "DEFAULT_POD_RESOURCES_SOCKET",
    "Exporter",
    "ExporterConfig",
    "make_backend",
    "otel_points",
    "run_until_signal",
]

logger = logging.getLogger(__name__)

BACKENDS = ("nvml", "sim", "auto")
DEFAULT_POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


# Polling and pushing more often than this buys nothing (NVML refreshes its counters every 1/6 s or slower)
# and costs a core; the flight recorder's ring is bounded so that no setting can grow the sidecar's memory
# past a few hundred MB (a week at one sample per 10 s is 60,480 samples).
MIN_INTERVAL_S = 0.1
MAX_HISTORY_SAMPLES = 100_000


@dataclass(frozen=True)
class ExporterConfig:
    """Every setting of `gpuobs export` (resolved already: flag > GPUOBS_EXPORT_* env > config file)."""

    backend: str = "auto"
    gpus: int = 8
    naming: str = "native"
    address: str = "127.0.0.1"
    port: int = 9400
    web_config: str | None = None
    enable_fault_injection: bool = False
    otlp_endpoint: str | None = None
    otlp_interval_s: float = 10.0
    history_minutes: float = 30.0
    history_interval_s: float = 10.0
    slow_interval_s: float = 5.0
    pod_resources_socket: str | None = DEFAULT_POD_RESOURCES_SOCKET
    seed: int = 0
    host: str | None = None

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.naming not in NAMINGS:
            raise InputError(f"--naming must be one of {', '.join(NAMINGS)}, got {self.naming!r}")
        if not 1 <= self.gpus <= 1024:
            raise InputError(f"--gpus must be between 1 and 1024, got {self.gpus}")
        if not 0 <= self.port <= 65535:
            raise InputError(f"--port must be between 0 and 65535, got {self.port}")
        if not self.address.strip():  # an empty bind address listens on every interface
            raise InputError("--address is empty: give one (0.0.0.0: every interface; default 127.0.0.1)")
        durations = {
            "--history-minutes": (self.history_minutes, "minutes"),
            "--history-interval": (self.history_interval_s, "seconds"),
            "--slow-interval": (self.slow_interval_s, "seconds"),
            "--otlp-interval": (self.otlp_interval_s, "seconds"),
        }
        for flag, (value, unit) in durations.items():
            if not (math.isfinite(value) and value > 0):  # nan and inf pass a bare `> 0` or fail it silently
                raise InputError(f"{flag} must be a positive number of {unit}, got {value:g}")
            if unit == "seconds" and value < MIN_INTERVAL_S:  # 1e-9 spun a core and grew without bound
                raise InputError(f"{flag} must be at least {MIN_INTERVAL_S:g} s, got {value:g}")
        samples = self.history_minutes * 60 / self.history_interval_s
        if samples > MAX_HISTORY_SAMPLES:
            raise InputError(
                f"--history-minutes {self.history_minutes:g} at one sample per --history-interval "
                f"{self.history_interval_s:g} s is {samples:,.0f} samples; the flight recorder keeps at most "
                f"{MAX_HISTORY_SAMPLES:,}: raise the interval or shorten the history"
            )


def make_backend(config: ExporterConfig) -> GpuBackend:
    """The backend the config asks for; `auto` picks NVML when a driver answers, else raises InputError."""
    if config.backend == "sim":
        from gpuobs.exporters.sidecar.sim import SimBackend

        return SimBackend(gpus=config.gpus, seed=config.seed)
    from gpuobs.exporters.sidecar.nvml import NvmlBackend, probe_nvml

    if config.backend == "auto":
        ok, why = probe_nvml()
        if not ok:
            raise InputError(
                f"--backend auto: no NVIDIA driver answered ({why}); use --backend sim for a simulated node"
            )
        logger.info("--backend auto: using NVML (%s)", why)
    return NvmlBackend()


def _otel_base(reading: Any, host: str) -> dict[str, Any]:
    info = reading.info
    attrs: dict[str, Any] = {
        "hw.id": info.uuid,
        "hw.type": "gpu",
        "hw.name": f"gpu{info.index}",
        "hw.model": info.name,
        "hw.vendor": "NVIDIA",
        "hw.driver_version": info.driver_version,
        "gpu.index": info.index,
        "host.name": host,
    }
    pod = reading.pod
    if pod is not None:
        for key, attr in (
            ("pod", "k8s.pod.name"),
            ("namespace", "k8s.namespace.name"),
            ("container", "k8s.container.name"),
        ):
            value = getattr(pod, key, None)
            if value:
                attrs[attr] = value
    return attrs


def otel_points(core: ExporterCore) -> list[tuple[Any, float, dict[str, Any]]]:
    """(spec, value in native units, attributes) for every field with an OTel name, read now."""
    snap = core.read()
    out: list[tuple[Any, float, dict[str, Any]]] = []
    for reading in snap.readings:
        base = _otel_base(reading, snap.host)
        for f in FIELDS:
            if f.spec.otel is None:
                continue
            source = reading.slow if f.slow else reading.sample
            value = None if source is None else getattr(source, f.attr)
            if value is None:
                continue
            # The pusher adds each spec's fixed attributes (extra["otel.attr.*"], e.g. hw.gpu.task).
            out.append((f.spec, float(value), dict(base)))
    return out


class Exporter:
    """The running exporter. `start()` returns once the port is bound; `stop()` shuts everything down."""

    def __init__(self, config: ExporterConfig, backend: GpuBackend | None = None) -> None:
        config.validate()
        self.config = config
        self.backend = backend or make_backend(config)
        if config.enable_fault_injection and not hasattr(self.backend, "inject"):
            raise InputError("--enable-fault-injection needs --backend sim (NVML faults cannot be injected)")
        self.host = config.host or node_name()
        self.pods: Any = None
        self.otlp: Any = None
        self.web_config: Any = None
        if config.web_config:
            self.web_config = self._load_web_config(config.web_config)
        self.core = ExporterCore(
            self.backend,
            CoreSettings(
                slow_interval_s=config.slow_interval_s,
                history_interval_s=config.history_interval_s,
                history_minutes=config.history_minutes,
            ),
            host=self.host,
        )
        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = GpuCollector(self.core, config.naming, extra_health=self._extra_health)
        self.registry.register(self.collector)
        self.server: ExporterHttpServer | None = None

    @staticmethod
    def _load_web_config(path: str) -> Any:
        try:
            from gpuobs.exporters.sidecar.webconfig import load_web_config
        except ImportError as exc:
            raise InputError(f"--web-config: web-config support is not available ({exc})") from exc
        return load_web_config(path)

    def _extra_health(self) -> dict[str, bool]:
        out: dict[str, bool] = {}
        if self.pods is not None:
            # No socket is not a failure (not on Kubernetes); a socket that does not answer is.
            out["pods"] = bool(getattr(self.pods, "available", True)) or not os.path.exists(
                self.config.pod_resources_socket or ""
            )
        return out

    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError("exporter not started")
        address = self.config.address
        host = f"[{address}]" if ":" in address else address
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"{self.server.scheme}://{host}:{self.server.port}"

    def start(self) -> Exporter:
        try:
            self.server = ExporterHttpServer(
                self.registry,
                self.config.address,
                self.config.port,
                health=self._health,
                history=lambda since: self.core.history.to_json(since, self.host),
                faults=self.backend if self.config.enable_fault_injection else None,  # type: ignore[arg-type]
                web_config=self.web_config,
            )
        except OSError as exc:
            raise InputError(f"cannot listen on {self.config.address}:{self.config.port}: {exc}") from exc
        self._start_pods()
        self.core.start()
        self.server.start()
        self._start_otlp()
        logger.info(
            "gpuobs export serving %s/metrics (backend %s, naming %s)",
            self.url,
            self.backend.name,
            self.config.naming,
            extra={"event": "export_started"},
        )
        return self

    def _start_pods(self) -> None:
        path = self.config.pod_resources_socket
        if not path or path.lower() == "none":
            return
        try:
            from gpuobs.exporters.sidecar.podresources import PodAttributor
        except ImportError as exc:
            logger.info("pod attribution unavailable: %s", exc)
            return
        self.pods = PodAttributor(path)
        self.pods.start()
        self.core.pods = self.pods

    def _start_otlp(self) -> None:
        if not self.config.otlp_endpoint:
            return
        try:
            from gpuobs.exporters.sidecar.otlp import OtlpMetricsPusher, OtlpPoint
        except ImportError as exc:
            raise InputError(f"--otlp-endpoint: OTLP push is not available ({exc})") from exc

        def read_points() -> list[Any]:
            return [OtlpPoint(spec, value, attrs) for spec, value, attrs in otel_points(self.core)]

        self.otlp = OtlpMetricsPusher(self.config.otlp_endpoint, self.config.otlp_interval_s, read_points)
        self.otlp.start()

    def _health(self) -> dict[str, Any]:
        return {
            "backend": self.backend.name,
            "nvml_up": self.core.nvml_up,
            "gpus": len(self.core.devices),
            "naming": self.config.naming,
            "host": self.host,
            "last_init_error": self.core.last_init_error or None,
        }

    def stop(self) -> None:
        if self.otlp is not None:
            try:
                self.otlp.stop()
            except Exception:
                logger.warning("stopping the OTLP pusher failed", exc_info=True)
        if self.server is not None:
            self.server.stop()
        if self.pods is not None:
            try:
                self.pods.stop()
            except Exception:
                logger.warning("stopping pod attribution failed", exc_info=True)
        self.core.stop()
        logger.info("gpuobs export stopped", extra={"event": "export_stopped"})


def run_until_signal(config: ExporterConfig, backend: GpuBackend | None = None) -> None:
    """Run the exporter in the foreground until SIGTERM or SIGINT, then stop it cleanly."""
    import signal
    import threading

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        logger.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    # SIGHUP's default ends the process without the "stopped" line or closing the OTLP pusher
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        exporter = Exporter(config, backend).start()
        try:
            while not stop.wait(1.0):
                pass
        finally:
            exporter.stop()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
