"""An exporter `/api/history` document (the flight recorder) -> metric summaries and XID events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import exporter as x
from gpuobs.names import gpu as g
from gpuobs.rca import keys
from gpuobs.rca.parsers.metrics import metric_evidence

__all__ = ["evidence_from_history"]


def evidence_from_history(
    data: Any, source: str = "exporter", start: float | None = None, end: float | None = None
) -> list[Evidence]:
    """Summaries (last, max, min per GPU and metric) and the XID events of an `/api/history` document."""
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise InputError(f"{source}: not an exporter /api/history document (no 'samples' list)")
    host = data.get("host") or None
    given = data["samples"]
    readable = [smp for smp in given if isinstance(smp, dict) and isinstance(smp.get("ts"), int | float)]
    if given and not readable:  # else the document reads as a healthy, quiet node
        raise InputError(
            f"{source}: not an exporter /api/history document (none of its {len(given)} samples is an object "
            "with a numeric 'ts')"
        )
    samples = [
        smp for smp in readable if (start is None or smp["ts"] >= start) and (end is None or smp["ts"] <= end)
    ]
    out: list[Evidence] = []
    series: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    nvml_down = [smp["ts"] for smp in samples if smp.get("nvml_up") is False]
    for smp in samples:
        for gpu in smp.get("gpus") or []:
            if not isinstance(gpu, dict) or not isinstance(gpu.get("gpu"), int):
                continue
            idx, uuid = gpu["gpu"], str(gpu.get("uuid") or "")
            series.setdefault((idx, uuid, x.GPU_UP.native), []).append(
                (smp["ts"], 1.0 if gpu.get("up") else 0.0)
            )
            values = gpu.get("values")
            for name, value in (values if isinstance(values, dict) else {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    series.setdefault((idx, uuid, name), []).append((smp["ts"], float(value)))
    for (idx, uuid, name), points in sorted(series.items()):
        labels = {"gpu": str(idx), "uuid": uuid, **({"host": host} if host else {})}
        last_t, last_v = points[-1]
        if name == g.CLOCK_EVENT_ACTIVE.native:
            active: dict[str, int] = {}
            for _, mask in points:
                for reason in g.clock_event_reasons(mask):
                    active[reason] = active.get(reason, 0) + 1
            for reason, n in active.items():
                out.append(
                    metric_evidence(
                        name,
                        1.0,
                        {**labels, "reason": reason},
                        source,
                        last_t,
                        "max",
                        {"active_ratio": n / len(points), "samples": len(points)},
                    )
                )
            continue
        values = [v for _, v in points]
        out.append(metric_evidence(name, last_v, labels, source, last_t, "last", {"samples": len(points)}))
        hi, lo = max(values), min(values)
        if hi != last_v:
            t_hi = next(t for t, v in points if v == hi)
            out.append(metric_evidence(name, hi, labels, source, t_hi, "max", {"samples": len(points)}))
        if lo != last_v:
            t_lo = next(t for t, v in points if v == lo)
            out.append(metric_evidence(name, lo, labels, source, t_lo, "min", {"samples": len(points)}))
    if nvml_down:
        out.append(
            Evidence(
                kind=EvidenceKind.STATE,
                key=keys.NVML_ERROR,
                value="init_failed",
                source=source,
                time=nvml_down[0],
                entity=Entity(host=host),
                raw=f"exporter reported NVML down in {len(nvml_down)} of {len(samples)} samples",
                attrs={"samples_down": len(nvml_down)},
            )
        )
    for event in _events(data.get("events"), start, end):
        if event.get("kind") != "xid":
            continue
        code = event.get("code")
        if not isinstance(code, int):
            continue
        idx = event.get("gpu")
        out.append(
            Evidence(
                kind=EvidenceKind.EVENT,
                key=keys.XID,
                value=code,
                source=source,
                time=float(event["ts"]),
                entity=Entity(
                    host=host,
                    gpu_index=idx if isinstance(idx, int) else None,
                    gpu_uuid=event.get("uuid") or None,
                ),
                raw=f"Xid {code} on GPU {idx}: {event.get('detail', '')}".strip(),
                attrs={"message": event.get("detail", ""), "origin": "nvml_event"},
            )
        )
    return out


def _events(events: Any, start: float | None, end: float | None) -> Iterable[dict[str, Any]]:
    for event in events if isinstance(events, list) else []:
        if (
            isinstance(event, dict)
            and isinstance(event.get("ts"), int | float)
            and (start is None or event["ts"] >= start)
            and (end is None or event["ts"] <= end)
        ):
            yield event
