"""The prometheus_client collector of `gpuobs export`: fresh metric families from a core snapshot each scrape.

`describe()` lists the families without touching the backend (so registration never calls NVML);
`collect()` never raises: each part runs on its own, and a failing part sets
`gpuobs_collector_success{collector}` to 0 and drops only its samples. Naming: `native` (gpuobs_* names,
lower-case labels), `dcgm` (dcgm-exporter's DCGM_FI_* names, units and labels, for metrics DCGM has;
gpuobs_* for the rest), `both`. `render()` writes the text exposition format; unlike prometheus_client's
writer it keeps DCGM's counter names as they are (no `_total`), as dcgm-exporter does.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample

from gpuobs.exporters.sidecar.core import ExporterCore, GpuReading, Snapshot
from gpuobs.exporters.sidecar.fields import FIELDS
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g
from gpuobs.names.spec import MetricKind, MetricSpec

__all__ = ["CONTENT_TYPE", "NAMINGS", "GpuCollector", "gpu_labels", "render"]

logger = logging.getLogger(__name__)

NAMINGS = ("native", "dcgm", "both")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def gpu_labels(reading: GpuReading, host: str, dcgm: bool) -> dict[str, str]:
    """The per-GPU label set in native or DCGM naming, with pod labels when the GPU is attributed."""
    info = reading.info
    # Label names come from the registry (g.DCGM_LABELS / g.GPU_LABELS), values in the same order.
    if dcgm:
        values = (str(info.index), info.uuid, info.pci_bus_id, info.device, info.name, host,
                  info.driver_version)
        labels = dict(zip(g.DCGM_LABELS, values, strict=True))
    else:
        labels = dict(zip(g.GPU_LABELS, (str(info.index), info.uuid, host, info.name), strict=True))
    pod = reading.pod
    if pod is not None:
        for key in g.POD_LABELS:
            value = getattr(pod, key, None)
            if value:
                labels[key] = str(value)
    return labels


_VALIDATED: set[str] = set()


class _Families:
    """Metric families of one scrape, created on first use."""

    def __init__(self) -> None:
        self.by_name: dict[str, Metric] = {}

    def family(self, name: str, help: str, kind: MetricKind) -> Metric:
        fam = self.by_name.get(name)
        if fam is None:
            typ = "counter" if kind is MetricKind.COUNTER else "gauge"
            if name in _VALIDATED:
                # Same fields as Metric.__init__ sets, without re-validating a name checked before.
                fam = Metric.__new__(Metric)
                fam.name, fam.documentation, fam.unit, fam.type, fam.samples = name, help, "", typ, []
            else:
                fam = Metric(name, help, typ)
                _VALIDATED.add(name)
            self.by_name[name] = fam
        return fam

    def add(
        self,
        name: str,
        help: str,
        kind: MetricKind,
        labels: dict[str, str],
        value: float,
        sample_name: str | None = None,
    ) -> None:
        self.family(name, help, kind).samples.append(Sample(sample_name or name, labels, value))

    def native(self, spec: MetricSpec, labels: dict[str, str], value: float) -> None:
        self.add(spec.native, spec.help, spec.kind, labels, value, spec.exposed_native)

    def dcgm(self, spec: MetricSpec, labels: dict[str, str], value: float) -> None:
        assert spec.dcgm is not None
        self.add(spec.dcgm, spec.help, spec.dcgm_kind or spec.kind, labels, value * spec.dcgm_scale)


class GpuCollector(Collector):
    """Turns `ExporterCore.read()` into metric families in the chosen naming."""

    def __init__(
        self,
        core: ExporterCore,
        naming: str = "native",
        extra_health: Callable[[], dict[str, bool]] | None = None,
    ) -> None:
        if naming not in NAMINGS:
            raise ValueError(f"naming must be one of {', '.join(NAMINGS)}, got {naming!r}")
        self.core = core
        self.naming = naming
        self.native = naming in ("native", "both")
        self.dcgm = naming in ("dcgm", "both")
        self.extra_health = extra_health
        self.last_snapshot: Snapshot | None = None

    def _specs(self) -> Iterator[tuple[str, str, MetricKind]]:
        plain = [f.spec for f in FIELDS] + [g.CLOCK_EVENT_ACTIVE, g.XID_LAST]
        own = [
            g.GPU_INFO,
            g.XID_ERRORS,
            g.PROCESS_MEMORY_USED,
            g.MIG_DEVICE_MEMORY_USED,
            g.MIG_DEVICE_MEMORY_TOTAL,
        ]
        for spec in plain:
            if self.native or (self.dcgm and spec.dcgm is None):
                yield spec.native, spec.help, spec.kind
            if self.dcgm and spec.dcgm:
                yield spec.dcgm, spec.help, spec.dcgm_kind or spec.kind
        for spec in own:
            yield spec.native, spec.help, spec.kind
        for spec in (
            ex.NVML_UP,
            ex.NVML_INIT_FAILURES,
            ex.GPU_UP,
            ex.COLLECTOR_SUCCESS,
            ex.SCRAPE_DURATION,
            ex.SLOW_FIELD_AGE,
            ex.HISTORY_SAMPLES,
        ):
            yield spec.native, spec.help, spec.kind

    def describe(self) -> Iterable[Metric]:
        """Empty families naming what collect() may yield; never touches the backend."""
        return [
            Metric(name, help, "counter" if kind is MetricKind.COUNTER else "gauge")
            for name, help, kind in self._specs()
        ]

    def collect(self) -> Iterable[Metric]:
        t0 = time.perf_counter()
        fams = _Families()
        ok: dict[str, bool] = {}
        durations: dict[str, float] = {}
        snap: Snapshot | None = None
        try:
            snap = self.core.read()
            self.last_snapshot = snap
            ok.update(snap.collector_ok)
            durations.update(snap.durations)
        except Exception:
            logger.exception("reading the GPU backend failed")
            ok["gpu"] = False
        if snap is not None:
            host = snap.host
            per_gpu = [
                (r, gpu_labels(r, host, False), gpu_labels(r, host, True) if self.dcgm else {})
                for r in snap.readings
            ]
            for part, fn in (
                ("gpu", self._plain),
                ("clock_events", self._clock_events),
                ("xid", self._xid),
                ("processes", self._processes),
                ("mig", self._mig),
            ):
                tp = time.perf_counter()
                try:
                    fn(fams, per_gpu)
                except Exception:
                    logger.exception("collector %s failed", part)
                    ok[part] = False
                    self._drop_partial(fams, part)
                else:
                    ok.setdefault(part, True)
                durations[part] = durations.get(part, 0.0) + time.perf_counter() - tp
            self._health(fams, snap, per_gpu)
        if self.extra_health is not None:
            try:
                ok.update(self.extra_health())
            except Exception:
                logger.exception("health callback failed")
        durations["total"] = time.perf_counter() - t0
        for name, success in ok.items():
            fams.add(
                ex.COLLECTOR_SUCCESS.native,
                ex.COLLECTOR_SUCCESS.help,
                MetricKind.GAUGE,
                {"collector": name},
                1.0 if success else 0.0,
            )
        for name, seconds in durations.items():
            fams.add(
                ex.SCRAPE_DURATION.native,
                ex.SCRAPE_DURATION.help,
                MetricKind.GAUGE,
                {"collector": name},
                seconds,
            )
        return list(fams.by_name.values())

    def _drop_partial(self, fams: _Families, part: str) -> None:
        """Samples of a part that failed half way are dropped whole (no half-filled families)."""
        names = {
            "clock_events": [g.CLOCK_EVENT_ACTIVE],
            "xid": [g.XID_LAST, g.XID_ERRORS],
            "processes": [g.PROCESS_MEMORY_USED],
            "mig": [g.MIG_DEVICE_MEMORY_USED, g.MIG_DEVICE_MEMORY_TOTAL],
        }.get(part, [f.spec for f in FIELDS])
        for spec in names:
            fams.by_name.pop(spec.native, None)
            if spec.dcgm:
                fams.by_name.pop(spec.dcgm, None)

    # --- parts ------------------------------------------------------------------------------------
    def _plain(
        self, fams: _Families, per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]]
    ) -> None:
        # Field-major: one family lookup per field, then a tight loop over the GPUs.
        native, dcgm = self.native, self.dcgm
        for f in FIELDS:
            spec, attr, is_slow = f.spec, f.attr, f.slow
            emit_native = native or spec.dcgm is None
            emit_dcgm = dcgm and spec.dcgm is not None
            nat = dc = None
            for r, nl, dl in per_gpu:
                source = r.slow if is_slow else r.sample
                if source is None:
                    continue
                value = getattr(source, attr)
                if value is None:
                    continue
                if emit_native:
                    if nat is None:
                        nat = fams.family(spec.native, spec.help, spec.kind).samples
                    nat.append(Sample(spec.exposed_native, nl, value))
                if emit_dcgm:
                    if dc is None:
                        dc = fams.family(spec.dcgm or "", spec.help, spec.dcgm_kind or spec.kind).samples
                    dc.append(Sample(spec.dcgm or "", dl, value * spec.dcgm_scale))
        for r, nl, _ in per_gpu:
            if r.slow_age_s is not None:
                fams.native(ex.SLOW_FIELD_AGE, nl, r.slow_age_s)

    def _clock_events(
        self, fams: _Families, per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]]
    ) -> None:
        spec = g.CLOCK_EVENT_ACTIVE
        for r, nl, dl in per_gpu:
            if r.sample is None or r.sample.clock_event_mask is None:
                continue
            mask = r.sample.clock_event_mask
            if self.native or not self.dcgm:
                active = g.clock_event_reasons(mask)
                for _, reason in g.CLOCK_EVENT_REASONS:
                    fams.native(spec, {**nl, "reason": reason}, 1.0 if reason in active else 0.0)
            if self.dcgm:
                fams.dcgm(spec, dl, float(mask))

    def _xid(self, fams: _Families, per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]]) -> None:
        for r, nl, dl in per_gpu:
            if self.native:
                fams.native(g.XID_LAST, nl, float(r.xid_last))
            if self.dcgm:
                fams.dcgm(g.XID_LAST, dl, float(r.xid_last))
            for code, count in sorted(r.xid_counts.items()):
                fams.native(g.XID_ERRORS, {**nl, "code": str(code)}, float(count))

    def _processes(
        self, fams: _Families, per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]]
    ) -> None:
        for r, nl, _ in per_gpu:
            if r.sample is None or not r.sample.processes:
                continue
            for p in r.sample.processes:
                if p.used_memory_bytes is None:
                    continue
                fams.native(
                    g.PROCESS_MEMORY_USED,
                    {**nl, "pid": str(p.pid), "process_name": p.name},
                    float(p.used_memory_bytes),
                )

    def _mig(self, fams: _Families, per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]]) -> None:
        for r, nl, _ in per_gpu:
            if r.sample is None or not r.sample.mig_devices:
                continue
            for m in r.sample.mig_devices:
                labels = {
                    **nl,
                    "mig_uuid": m.uuid,
                    "gpu_instance_id": str(m.gpu_instance_id),
                    "compute_instance_id": str(m.compute_instance_id),
                }
                if m.memory_used_bytes is not None:
                    fams.native(g.MIG_DEVICE_MEMORY_USED, labels, float(m.memory_used_bytes))
                if m.memory_total_bytes is not None:
                    fams.native(g.MIG_DEVICE_MEMORY_TOTAL, labels, float(m.memory_total_bytes))

    def _health(
        self,
        fams: _Families,
        snap: Snapshot,
        per_gpu: list[tuple[GpuReading, dict[str, str], dict[str, str]]],
    ) -> None:
        fams.native(ex.NVML_UP, {}, 1.0 if snap.nvml_up else 0.0)
        fams.native(ex.NVML_INIT_FAILURES, {}, float(snap.init_failures))
        fams.native(ex.HISTORY_SAMPLES, {}, float(len(self.core.history)))
        for r, nl, _ in per_gpu:
            fams.native(ex.GPU_UP, nl, 1.0 if r.up else 0.0)
            info = r.info
            fams.native(
                g.GPU_INFO,
                {
                    **nl,
                    "pci_bus_id": info.pci_bus_id,
                    "device": info.device,
                    "driver_version": info.driver_version,
                },
                1.0,
            )


def _escape(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _number(value: float) -> str:
    """Prometheus text value: repr of a float, with Go's spellings of the non-finite ones."""
    if -math.inf < value < math.inf:
        return repr(value)
    if value != value:
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def render(registry: CollectorRegistry) -> bytes:
    """Text exposition (0.0.4) of every family with samples; counters keep the sample names they have.

    Label sets are rendered once per dict object: the collector shares one dict per GPU between that
    GPU's samples, which makes this several times cheaper than prometheus_client's generate_latest.
    The cache holds each dict beside its text: a collector that yields families one at a time frees
    their dicts, and a freed dict's id is reused by the next one, so an id alone would name the wrong
    labels. It writes a family's samples under the family's TYPE line, which is right for the plain
    families collectors yield; prometheus_client's own Counter/Histogram objects carry `_created`
    samples that need a family of their own, so registries of those (`gpuobs serve`) keep
    generate_latest.
    """
    out: list[str] = []
    label_text: dict[int, tuple[dict[str, str], str]] = {}
    for metric in registry.collect():
        if not metric.samples:
            continue
        typ: Any = metric.type
        name = metric.name
        if typ == "counter" and metric.samples[0].name.endswith("_total") and not name.endswith("_total"):
            name += "_total"
        elif typ == "info":
            typ = "gauge"
        elif typ not in ("gauge", "counter", "histogram", "summary"):
            typ = "untyped"
        doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {typ}\n")
        for s in metric.samples:
            labels = s.labels
            if labels:
                cached = label_text.get(id(labels))
                if cached is not None and cached[0] is labels:
                    text = cached[1]
                else:
                    text = "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"
                    label_text[id(labels)] = (labels, text)
                out.append(f"{s.name}{text} {_number(s.value)}\n")
            else:
                out.append(f"{s.name} {_number(s.value)}\n")
    return "".join(out).encode("utf-8")
