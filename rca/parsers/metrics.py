"""Metric samples -> Evidence: the one shape every metric source (Prometheus, exporter history, a saved
`/metrics`, live NVML) gives its records.

Every metric record uses the NATIVE name of `gpuobs.names` as its key (DCGM names are mapped back
through each spec's `dcgm` field and scale; vLLM names are kept as `vllm:...`), `attrs["labels"]`
holds the full label set and `attrs["agg"]` says what the value is over the window: `last`, `max`,
`min`, `increase`, `p99`, `p50`, or `sample` for a single exposition sample; a summary of one half of
the window also carries `attrs[WINDOW_HALF]` (1 or 2) and is dated at that half's end.
"""

from __future__ import annotations

from typing import Any

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import all_specs
from gpuobs.names import gpu as g
from gpuobs.names import kernel as kn
from gpuobs.names.spec import MetricSpec
from gpuobs.rca.parsers.prefix import normalize_pci

__all__ = [
    "WINDOW_HALF",
    "clock_reason_evidence",
    "dcgm_specs",
    "format_labels",
    "metric_entity",
    "metric_evidence",
]

WINDOW_HALF = "half"
"""Attribute of a summary over one half of the incident window: 1 (the first half) or 2 (the second)."""


# Families of the in-process exporter: served by the serving process itself, like the vLLM metrics.
_IN_PROCESS = frozenset(
    spec.native for spec in (kn.KERNEL_LAUNCHES, kn.KERNEL_DURATION, kn.CUDA_ERRORS, kn.ENGINE_LOG_MESSAGES)
)


def dcgm_specs() -> dict[str, MetricSpec]:
    """Every metric spec by its dcgm-exporter name (to map DCGM samples back to native names)."""
    return {spec.dcgm: spec for spec in all_specs() if spec.dcgm}


def metric_entity(labels: dict[str, str], serving: bool) -> Entity:
    """The entity a series is about, from native, DCGM or Prometheus-relabelled label names."""
    gpu = labels.get("gpu")
    host = labels.get("host") or labels.get("hostname") or labels.get("Hostname") or labels.get("node")
    if host is None and "instance" in labels and not serving:
        host = labels["instance"].rsplit(":", 1)[0]
    return Entity(
        host=host or None,
        gpu_uuid=labels.get("uuid") or labels.get("UUID") or None,
        gpu_index=int(gpu) if gpu is not None and gpu.isdecimal() else None,
        pci_bus_id=normalize_pci(labels.get("pci_bus_id")),
        pod=labels.get("pod") or labels.get("exported_pod") or None,
        namespace=labels.get("namespace") or labels.get("exported_namespace") or None,
        container=labels.get("container") or labels.get("exported_container") or None,
        model=labels.get("model_name") if serving else None,
        tenant=labels.get("tenant") or None,
    )


def metric_evidence(
    key: str,
    value: float,
    labels: dict[str, str],
    source: str,
    when: float | None,
    agg: str,
    extra: dict[str, Any] | None = None,
) -> Evidence:
    """One METRIC record: `key` is the native name, `agg` what the value is over the window."""
    # A serving process's series: its scrape address is no host name, and `model_name` is the served model.
    serving = key.startswith(("vllm:", "gpuobs_serving_")) or key in _IN_PROCESS
    attrs: dict[str, Any] = {"labels": labels, "agg": agg}
    if extra:
        attrs.update(extra)
    return Evidence(
        kind=EvidenceKind.METRIC,
        key=key,
        value=value,
        source=source,
        time=when,
        entity=metric_entity(labels, serving),
        raw=f"{key}{format_labels(labels)} {value:g}",
        attrs=attrs,
    )


def format_labels(labels: dict[str, str]) -> str:
    """`{a="1",b="2"}` as in exposition text (sorted), or "" with no labels."""
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def clock_reason_evidence(
    mask: float, labels: dict[str, str], source: str, when: float | None, agg: str
) -> list[Evidence]:
    """One `clock_event_active{reason}` record per reason set in an NVML clock-event bitmask."""
    name = g.CLOCK_EVENT_ACTIVE.native
    return [
        metric_evidence(name, 1.0, {**labels, "reason": reason}, source, when, agg)
        for reason in g.clock_event_reasons(mask)
    ]
