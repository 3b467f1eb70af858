"""The signature catalog as data: every entry loads, reads only known evidence keys, and can be explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuobs.names import all_specs, spans
from gpuobs.rca import keys
from gpuobs.rca.anomalies import ANOMALY_PREFIX, DETECTORS, INCREASE_PREFIX, metric_increases
from gpuobs.rca.catalog import CATALOG_DIR, load_catalog, load_text_weights
from gpuobs.rca.signature import Scope

SPAN_NAMES = {*spans.ENGINE_SPANS, spans.SPAN_KERNEL_LAUNCH}  # request spans have no fixed name
# Each detector names its records after itself (`anomaly.<detector>`); metric_increases gives `increase:`.
ANOMALIES = {d.__name__ for d in DETECTORS if d is not metric_increases}


def _known_key(key: str) -> bool:
    natives = {s.native for s in all_specs()}
    log_keys = {v for k, v in vars(keys).items() if k.isupper() and isinstance(v, str)}
    if key.startswith(ANOMALY_PREFIX):
        return key[len(ANOMALY_PREFIX) :] in ANOMALIES
    if key.startswith(INCREASE_PREFIX):
        return key[len(INCREASE_PREFIX) :] in natives
    return key in log_keys or key in natives or key in SPAN_NAMES


def test_every_catalog_file_loads_and_is_named_after_its_id() -> None:
    catalog = load_catalog()
    assert catalog.problems == ()
    files = sorted(p.stem for p in CATALOG_DIR.glob("*.toml") if not p.name.startswith("_"))
    assert files == sorted(s.id for s in catalog.signatures)


def test_declared_causality_names_real_signatures() -> None:
    ids = {s.id for s in load_catalog().signatures}
    for sig in load_catalog().signatures:
        named = {*sig.explains_signatures, *sig.explained_by}
        assert named <= ids, f"{sig.id} names unknown signatures {sorted(named - ids)}"
        assert sig.id not in named, f"{sig.id} explains itself"


def test_every_signature_has_text_phrases_and_fitted_weights_belong_to_them() -> None:
    catalog = load_catalog()
    by_id = catalog.by_id()
    for sig in catalog.signatures:
        assert sig.phrases, f"{sig.id} has no [text.phrases]"
        assert all(0 < w < 1 for _, w in sig.phrases), sig.id
    for sig_id, weights in load_text_weights().items():
        assert sig_id in by_id, f"_text_weights.toml names unknown signature {sig_id}"
        own = {p for p, _ in by_id[sig_id].phrases}
        assert set(weights) <= own, f"{sig_id}: fitted phrases {sorted(set(weights) - own)} not in its file"


@pytest.mark.parametrize("sig", load_catalog().signatures, ids=lambda s: s.id)
def test_signature_is_complete(sig) -> None:  # type: ignore[no-untyped-def]
    assert sig.title and len(sig.explanation) > 60 and sig.remediation
    unknown = sorted(k for k in sig.evidence_keys() if not _known_key(k))
    assert not unknown, f"{sig.id} reads unknown evidence keys {unknown}"
    assert all(m.keys for m in sig.matchers()), f"{sig.id}: every matcher must name its evidence keys"
    for variant in sig.variants:
        assert 0 < variant.base < 1
    if sig.scope is Scope.GPU:
        assert any("{gpu}" in r or "{pci}" in r or "{uuid}" in r for r in sig.remediation), sig.id


def test_detectors_and_catalog_agree_on_anomaly_names() -> None:
    used = {
        k[len(ANOMALY_PREFIX) :]
        for s in load_catalog().signatures
        for k in s.evidence_keys()
        if k.startswith(ANOMALY_PREFIX)
    }
    assert used <= ANOMALIES


def test_bad_entries_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(
        'id = "b"\ntitle="t"\nseverity="high"\nscope="gpu"\nexplanation="e"\n'
        'remediation=[]\nrequire=[{key="xid"}]\n'
    )
    (tmp_path / "c.toml").write_text(
        'id = "c"\ntitle="t"\nseverity="urgent"\nscope="gpu"\nexplanation="e"\n'
        'remediation=[]\nrequire=[{key="xid"}]\n'
    )
    (tmp_path / "d.toml").write_text(
        'id = "d"\ntitle="t"\nseverity="high"\nscope="gpu"\nexplanation="e"\n'
        'remediation=[]\nrequire=[{metric="gpu.NO_SUCH_METRIC"}]\n'
    )
    (tmp_path / "e.toml").write_text("not toml [")
    loaded = load_catalog(tmp_path.glob("*.toml"))
    assert loaded.signatures == ()
    text = "\n".join(loaded.problems)
    assert "differs from the file name" in text and "urgent" in text and "NO_SUCH_METRIC" in text
    assert len(loaded.problems) == 4
