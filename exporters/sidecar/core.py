"""The exporter's engine: owns a backend and the background threads around it, and hands out snapshots.

Threads: a supervisor that (re)initialises the backend with exponential backoff (so an NVML init failure
serves `gpuobs_nvml_up 0` instead of exiting), a slow poller (energy, PCIe throughput, GPM) whose values
are served from cache with their age, an XID event thread (counter per code, last code, one JSON log
line per event) and the flight recorder's sampler. `read()` is the scrape path: cheap fields only, and it
never raises for a device fault (a lost GPU is `up=False`, the others keep reporting).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpuobs.exporters.sidecar.backend import (
    BackendInitError,
    BackendUnavailableError,
    GpuBackend,
    GpuLostError,
)
from gpuobs.exporters.sidecar.history import FlightRecorder
from gpuobs.exporters.sidecar.samples import DeviceInfo, GpuSample, SlowSample, XidEvent
from gpuobs.telemetry import node_name

__all__ = ["CoreSettings", "ExporterCore", "GpuReading", "PodLookup", "Snapshot"]

logger = logging.getLogger(__name__)


class PodLookup(Protocol):
    """What the core needs from pod attribution (gpuobs.exporters.sidecar.podresources.PodAttributor)."""

    def lookup(self, uuid: str) -> Any: ...


@dataclass(frozen=True)
class CoreSettings:
    """Timings of the background work (seconds)."""

    slow_interval_s: float = 5.0
    history_interval_s: float = 10.0
    history_minutes: float = 30.0
    init_backoff_s: float = 0.5
    init_backoff_max_s: float = 30.0
    xid_wait_s: float = 0.5


@dataclass
class GpuReading:
    """Everything one scrape knows about one GPU."""

    info: DeviceInfo
    up: bool
    sample: GpuSample | None
    slow: SlowSample | None
    slow_age_s: float | None
    xid_last: int
    xid_counts: dict[int, int]
    pod: Any = None


@dataclass
class Snapshot:
    """One read of the whole node."""

    ts: float
    host: str
    nvml_up: bool
    init_failures: int
    readings: list[GpuReading]
    collector_ok: dict[str, bool] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)


class ExporterCore:
    """Backend + supervisor, slow poller, XID thread and flight recorder. Start with `start()`."""

    def __init__(
        self,
        backend: GpuBackend,
        settings: CoreSettings | None = None,
        host: str | None = None,
        pods: PodLookup | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings or CoreSettings()
        self.host = host or node_name()
        self.pods = pods
        self.history = FlightRecorder(self.settings.history_minutes * 60, self.settings.history_interval_s)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reinit = threading.Event()
        self._devices: list[DeviceInfo] = []
        self._up = False
        self._init_failures = 0
        self._last_init_error = ""
        self._lost: set[int] = set()
        self._slow: dict[int, SlowSample] = {}
        self._slow_ok = True
        self._xid_ok = True
        self._xid_counts: dict[int, dict[int, int]] = {}
        self._xid_last: dict[int, int] = {}
        self.xid_events: deque[XidEvent] = deque(maxlen=1000)
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Try init once now (a healthy start serves data at once), then start the threads."""
        self._try_init()
        for target, name in (
            (self._supervise, "gpuobs-init"),
            (self._poll_slow, "gpuobs-slow"),
            (self._watch_xid, "gpuobs-xid"),
            (self._record, "gpuobs-history"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the threads and shut the backend down."""
        self._stop.set()
        self._reinit.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        try:
            self.backend.shutdown()
        except Exception:
            logger.warning("backend shutdown failed", exc_info=True)

    @property
    def nvml_up(self) -> bool:
        return self._up

    @property
    def init_failures(self) -> int:
        return self._init_failures

    @property
    def last_init_error(self) -> str:
        return self._last_init_error

    @property
    def devices(self) -> list[DeviceInfo]:
        return list(self._devices)

    # --- init and backoff -----------------------------------------------------------------------------
    def _try_init(self) -> bool:
        with self._lock:
            try:
                devices = self.backend.init()
            except BackendInitError as exc:
                self._init_failures += 1
                self._last_init_error = str(exc)
                self._up = False
                logger.warning(
                    "GPU backend init failed (attempt %d): %s",
                    self._init_failures,
                    exc,
                    extra={"event": "backend_init_failed"},
                )
                return False
            except Exception as exc:  # a backend bug must not kill the exporter either
                self._init_failures += 1
                self._last_init_error = f"{type(exc).__name__}: {exc}"
                self._up = False
                logger.error("GPU backend init raised unexpectedly: %s", exc, exc_info=True)
                return False
            self._devices = devices
            self._lost.clear()
            self._up = True
            logger.info(
                "GPU backend %s up with %d GPUs",
                self.backend.name,
                len(devices),
                extra={"event": "backend_up"},
            )
            return True

    def _mark_down(self, why: str) -> None:
        with self._lock:
            if not self._up:
                return
            self._up = False
            self._last_init_error = why
        logger.error(
            "GPU backend stopped answering: %s; re-initialising with backoff",
            why,
            extra={"event": "backend_down"},
        )
        try:
            self.backend.shutdown()
        except Exception:
            logger.debug("shutdown after failure raised", exc_info=True)
        self._reinit.set()

    def _supervise(self) -> None:
        backoff = self.settings.init_backoff_s
        while not self._stop.is_set():
            if self._up:
                backoff = self.settings.init_backoff_s
                self._reinit.wait(1.0)
                self._reinit.clear()
                continue
            if self._stop.wait(backoff):
                return
            if not self._try_init():
                backoff = min(backoff * 2, self.settings.init_backoff_max_s)

    # --- scrape path ----------------------------------------------------------------------------------
    def read(self) -> Snapshot:
        """Read every GPU's cheap fields now; slow fields come from the poller's cache."""
        t0 = time.perf_counter()
        snap = Snapshot(
            ts=time.time(), host=self.host, nvml_up=self._up, init_failures=self._init_failures, readings=[]
        )
        gpu_ok = True
        if self._up:
            now = time.monotonic()
            for info in self._devices:
                sample, up = None, True
                try:
                    sample = self.backend.sample(info.index)
                    if info.index in self._lost:
                        self._lost.discard(info.index)
                        logger.info(
                            "gpu %d answers again", info.index, extra={"gpu": info.index, "uuid": info.uuid}
                        )
                except GpuLostError as exc:
                    up = False
                    if info.index not in self._lost:
                        self._lost.add(info.index)
                        logger.error(
                            "gpu %d lost: %s",
                            info.index,
                            exc,
                            extra={"gpu": info.index, "uuid": info.uuid, "event": "gpu_lost"},
                        )
                except BackendUnavailableError as exc:
                    self._mark_down(str(exc))
                    snap.nvml_up = False
                    snap.readings = []
                    gpu_ok = False
                    break
                except Exception as exc:
                    gpu_ok = False
                    logger.warning("gpu %d sample failed: %s", info.index, exc, extra={"gpu": info.index})
                slow = self._slow.get(info.index)
                pod = None
                if self.pods is not None:
                    try:
                        pod = self.pods.lookup(info.uuid)
                    except Exception:
                        logger.debug("pod lookup failed", exc_info=True)
                snap.readings.append(
                    GpuReading(
                        info=info,
                        up=up,
                        sample=sample,
                        slow=slow,
                        slow_age_s=None if slow is None else max(0.0, now - slow.taken_at),
                        xid_last=self._xid_last.get(info.index, 0),
                        xid_counts=dict(self._xid_counts.get(info.index, {})),
                        pod=pod,
                    )
                )
        snap.collector_ok = {
            "gpu": gpu_ok and snap.nvml_up,
            "slow": self._slow_ok and snap.nvml_up,
            "xid": self._xid_ok,
        }
        snap.durations = {"gpu": time.perf_counter() - t0}
        return snap

    # --- background work ------------------------------------------------------------------------------
    def poll_slow_once(self) -> None:
        """One round of the slow fields over every GPU that answers."""
        ok = True
        for info in list(self._devices):
            if not self._up or self._stop.is_set():
                return
            if info.index in self._lost:
                continue
            try:
                self._slow[info.index] = self.backend.slow_sample(info.index)
            except GpuLostError:
                continue
            except BackendUnavailableError as exc:
                self._mark_down(str(exc))
                return
            except Exception as exc:
                ok = False
                logger.warning("slow fields of gpu %d failed: %s", info.index, exc, extra={"gpu": info.index})
        self._slow_ok = ok

    def _poll_slow(self) -> None:
        while not self._stop.is_set():
            if self._up:
                self.poll_slow_once()
            self._stop.wait(self.settings.slow_interval_s if self._up else 0.2)

    def record_xid(self, event: XidEvent) -> None:
        """Count one XID event, remember it as the GPU's last, and log it as one JSON line."""
        info = next((d for d in self._devices if d.index == event.gpu), None)
        with self._lock:
            per_gpu = self._xid_counts.setdefault(event.gpu, {})
            per_gpu[event.code] = per_gpu.get(event.code, 0) + 1
            self._xid_last[event.gpu] = event.code
            self.xid_events.append(event)
        self.history.add_event(
            {
                "ts": event.ts,
                "kind": "xid",
                "gpu": event.gpu,
                "code": event.code,
                "uuid": info.uuid if info else None,
                "detail": event.detail,
            }
        )
        logger.error(
            "XID %d on gpu %d%s",
            event.code,
            event.gpu,
            f": {event.detail}" if event.detail else "",
            extra={
                "event": "xid",
                "xid": event.code,
                "gpu": event.gpu,
                "uuid": info.uuid if info else None,
                "host": self.host,
                "pci_bus_id": info.pci_bus_id if info else None,
            },
        )

    def _watch_xid(self) -> None:
        while not self._stop.is_set():
            if not self._up:
                self._stop.wait(0.2)
                continue
            try:
                event = self.backend.wait_xid(self.settings.xid_wait_s)
                self._xid_ok = True
            except BackendUnavailableError as exc:
                self._mark_down(str(exc))
                continue
            except Exception as exc:
                self._xid_ok = False
                logger.warning("XID wait failed: %s", exc)
                self._stop.wait(1.0)
                continue
            if event is not None:
                self.record_xid(event)

    def _record(self) -> None:
        while not self._stop.wait(self.settings.history_interval_s):
            try:
                self.history.record(self.read())
            except Exception:
                logger.warning("flight recorder sample failed", exc_info=True)
