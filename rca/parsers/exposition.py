"""A saved `/metrics` text (Prometheus or OpenMetrics exposition) -> metric Evidence."""

from __future__ import annotations

import math
import re

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.names import by_native_name
from gpuobs.names import gpu as g
from gpuobs.rca.parsers.metrics import clock_reason_evidence, dcgm_specs, metric_evidence

__all__ = ["exposition_lines", "looks_like_exposition", "parse_exposition"]

# A sample line: a metric name, its labels if any, a value and an optional timestamp.
_SAMPLE_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?[ \t]+\S+(?:[ \t]+\S+)?[ \t]*")
_COMMENTS = ("# HELP ", "# TYPE ", "# UNIT ", "# EOF")


def looks_like_exposition(text: str) -> bool:
    """True for Prometheus/OpenMetrics exposition text (a saved `/metrics`)."""
    head = text.lstrip()[:4096]
    return head.startswith(("# HELP ", "# TYPE ")) or (
        "# TYPE " in head and ("gpuobs_" in head or "DCGM_FI_" in head or "vllm:" in head)
    )


def exposition_lines(text: str) -> str:
    """The lines of a text shaped like exposition (comments, samples): a `/metrics` body out of a terminal
    paste that also holds the shell prompt and the `curl` command, or a note around it."""
    return "\n".join(
        line for line in text.splitlines() if line.startswith(_COMMENTS) or _SAMPLE_RE.fullmatch(line)
    )


def parse_exposition(text: str, source: str = "metrics", when: float | None = None) -> list[Evidence]:
    """Evidence from a saved `/metrics` text (native, DCGM-compatible or vLLM names)."""
    from prometheus_client.parser import text_string_to_metric_families

    dcgm = dcgm_specs()
    out: list[Evidence] = []
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        raise InputError(f"{source}: not valid Prometheus exposition text ({exc})") from exc
    for family in families:
        for sample in family.samples:
            name, labels, value = sample.name, dict(sample.labels), float(sample.value)
            if math.isnan(value) or name.endswith("_bucket") or name.endswith("_created"):
                continue
            t = sample.timestamp if sample.timestamp is not None else when
            t = float(t) if t is not None else None
            if name in dcgm:
                spec = dcgm[name]
                if spec.native == g.CLOCK_EVENT_ACTIVE.native:
                    out.extend(clock_reason_evidence(value, labels, source, t, "sample"))
                    continue
                out.append(
                    metric_evidence(
                        spec.native,
                        value / (spec.dcgm_scale or 1.0),
                        labels,
                        source,
                        t,
                        "sample",
                        {"dcgm": name},
                    )
                )
                continue
            if name.startswith("vllm:"):
                out.append(metric_evidence(name, value, labels, source, t, "sample"))
                continue
            if name.startswith("gpuobs_"):
                try:
                    native = by_native_name(name).native
                except KeyError:
                    native = name
                out.append(metric_evidence(native, value, labels, source, t, "sample"))
    return out
