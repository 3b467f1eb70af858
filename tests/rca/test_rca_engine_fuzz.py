"""Property tests: any evidence, however odd, gives a deterministic JSON report and no signature failure."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca.catalog import load_catalog
from gpuobs.rca.engine import diagnose_evidence

CATALOG = load_catalog()
KEYS = sorted({k for s in CATALOG.signatures for k in s.evidence_keys()} | {"log_line", "unknown_key"})

values = st.one_of(
    st.none(),
    st.integers(-5, 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["79", "cudaErrorIllegalAddress", "OOMKilled", "network", "RESOURCE_EXHAUSTED", "", "x"]),
)
attr_values = st.one_of(st.none(), st.integers(-3, 10**12), st.text(max_size=12), st.floats(allow_nan=True))
attrs = st.dictionaries(
    st.sampled_from(
        [
            "pci",
            "process",
            "tried",
            "allocated",
            "reserved_unallocated",
            "total",
            "repeats",
            "line",
            "gpu",
            "code",
            "reason",
            "model",
            "message",
            "result",
        ]
    ),
    attr_values,
    max_size=5,
).flatmap(
    lambda a: (
        st.just(a)
        | st.builds(
            lambda labels: {**a, "labels": labels},
            st.dictionaries(
                st.sampled_from(["gpu", "uuid", "pci_bus_id", "reason", "code", "pod", "host"]),
                st.text(max_size=8),
                max_size=4,
            ),
        )
    )
)
entities = st.builds(
    Entity,
    host=st.sampled_from([None, "h1", "h2"]),
    gpu_uuid=st.sampled_from([None, "GPU-a", "GPU-b"]),
    gpu_index=st.sampled_from([None, 0, 1, 7]),
    pci_bus_id=st.sampled_from([None, "0000:3b:00", "00000000:3B:00.0", "garbage"]),
    pod=st.sampled_from([None, "p1", "p2"]),
)
evidence = st.builds(
    Evidence,
    kind=st.sampled_from(list(EvidenceKind)),
    key=st.sampled_from(KEYS),
    value=values,
    source=st.sampled_from(["a.log", "b.log", "prometheus", ""]),
    time=st.one_of(st.none(), st.floats(1.7e9, 1.8e9)),
    entity=entities,
    raw=st.text(max_size=40),
    attrs=attrs,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(evidence, max_size=40))
def test_any_evidence_gives_a_report(records: list[Evidence]) -> None:
    report = diagnose_evidence(records, CATALOG)
    assert report.problems == (), report.problems
    text = json.dumps(report.to_dict(), sort_keys=True, default=str, allow_nan=False)
    again = diagnose_evidence(list(records), CATALOG).to_dict()
    assert json.dumps(again, sort_keys=True, default=str) == text
    for cause in report.causes:
        assert 0 < cause.confidence <= 1 and not math.isnan(cause.confidence)
        assert cause.evidence and cause.remediation
