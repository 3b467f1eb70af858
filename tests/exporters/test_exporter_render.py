"""The /metrics renderer writes exactly what collectors yield, whatever their label dicts' lifetimes."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from gpuobs.exporters.sidecar.collector import render

FAMILIES = 200


class OneAtATime:
    """Yields each family only when asked for the next: the previous family and its label dicts are
    freed, so CPython hands their ids to the next ones (as with the launcher's and TensorRT's collectors)."""

    def collect(self) -> Iterator[Metric]:
        for i in range(FAMILIES):
            if i % 2:
                fam: Metric = CounterMetricFamily(f"fam_{i}", "counter family", labels=["kernel", "i"])
            else:
                fam = GaugeMetricFamily(f"fam_{i}", "gauge family", labels=["kernel", "i"])
            fam.add_metric([f"k{i}", str(i)], float(i))
            yield fam


def _samples(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_families_yielded_one_at_a_time_keep_their_own_labels() -> None:
    registry = CollectorRegistry()
    registry.register(OneAtATime())  # type: ignore[arg-type]
    got = _samples(render(registry).decode())
    want = {
        (f"fam_{i}_total" if i % 2 else f"fam_{i}", (("i", str(i)), ("kernel", f"k{i}")), float(i))
        for i in range(FAMILIES)
    }
    wrong = got ^ want
    assert not wrong, f"{len(wrong)} samples differ, e.g. {sorted(wrong)[:3]}"


def test_one_label_dict_shared_by_many_families_renders_right_everywhere() -> None:
    class Shared:
        """Like GpuCollector: one label dict per GPU, shared by that GPU's samples in every family."""

        def collect(self) -> Iterator[Metric]:
            per_gpu = [{"gpu": "0", "uuid": "GPU-a"}, {"gpu": "1", "uuid": "GPU-b"}]
            for name in ("a", "b", "c"):
                fam = GaugeMetricFamily(name, "shared")
                fam.samples = [Sample(name, labels, float(n)) for n, labels in enumerate(per_gpu)]
                yield fam

    registry = CollectorRegistry()
    registry.register(Shared())  # type: ignore[arg-type]
    got = _samples(render(registry).decode())
    gpus = ((0, "GPU-a"), (1, "GPU-b"))
    want = {(n, (("gpu", str(g)), ("uuid", u)), float(g)) for n in "abc" for g, u in gpus}
    assert got == want
