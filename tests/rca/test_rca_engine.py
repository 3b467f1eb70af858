"""The RCA engine on Evidence built in the test: alignment, time relations, ranking, no invented causes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import gpu as gpu_names
from gpuobs.names import serving as serving_names
from gpuobs.rca import DiagnoseInputs, diagnose
from gpuobs.rca.catalog import Catalog, load_catalog, parse_signature
from gpuobs.rca.engine import diagnose_evidence
from gpuobs.rca.entities import EntityIndex, normalise_pci
from gpuobs.rca.report import NO_CAUSE

T0 = 1_790_000_000.0
GIB = 2**30


def log(
    key: str,
    value: object = None,
    t: float | None = T0,
    raw: str = "",
    source: str = "dmesg",
    entity: Entity | None = None,
    **attrs: object,
) -> Evidence:
    return Evidence(
        kind=EvidenceKind.LOG,
        key=key,
        value=value,
        source=source,
        time=t,  # type: ignore[arg-type]
        entity=entity or Entity(),
        raw=raw or f"{key} {value}",
        attrs=dict(attrs),
    )


def metric(spec_native: str, value: float, t: float, **labels: object) -> Evidence:
    entity = Entity(
        host=str(labels.get("host", "node-1")),
        gpu_index=int(labels["gpu"]) if "gpu" in labels else None,  # type: ignore[call-overload]
        gpu_uuid=str(labels["uuid"]) if "uuid" in labels else None,
        pod=str(labels["pod"]) if "pod" in labels else None,
    )
    return Evidence(
        kind=EvidenceKind.METRIC,
        key=spec_native,
        value=value,
        source="prometheus",
        time=t,
        entity=entity,
        attrs={"labels": {k: str(v) for k, v in labels.items()}},
    )


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    loaded = load_catalog()
    assert not loaded.problems, loaded.problems
    return loaded


def test_xid_before_cuda_errors_makes_the_xid_the_cause(catalog: Catalog) -> None:
    evidence = [
        log(
            "xid",
            79,
            T0,
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
            pci="0000:3b:00",
        ),
        log(
            "cuda_error",
            "cudaErrorIllegalAddress",
            T0 + 3,
            "CUDA error: an illegal memory access was encountered",
            source="app.log",
        ),
        log("nccl_timeout", None, T0 + 600, "Watchdog caught collective operation timeout", source="app.log"),
    ]
    report = diagnose_evidence(evidence, catalog)
    assert report.top is not None and report.top.id == "xid_79_fallen_off_bus"
    ids = [c.id for c in report.causes]
    assert "illegal_memory_access" not in ids and "nccl_timeout" not in ids
    explained = {s.id for s in report.top.explained_symptoms if s.id}
    assert {"illegal_memory_access", "nccl_timeout"} <= explained
    assert report.top.entity.get("pci_bus_id") == "0000:3b:00"


def test_cuda_error_before_xid_31_makes_the_application_the_cause(catalog: Catalog) -> None:
    app_first = [
        log(
            "cuda_error",
            "cudaErrorIllegalAddress",
            T0,
            "CUDA error: an illegal memory access",
            source="app.log",
        ),
        log(
            "xid",
            31,
            T0 + 5,
            "NVRM: Xid (PCI:0000:3b:00): 31, pid=99, name=python3, MMU Fault",
            process="python3",
        ),
    ]
    assert diagnose_evidence(app_first, catalog).top.id == "illegal_memory_access"  # type: ignore[union-attr]
    xid_first = [
        log(
            "xid",
            31,
            T0,
            "NVRM: Xid (PCI:0000:3b:00): 31, pid=99, name=python3, MMU Fault",
            process="python3",
        ),
        log(
            "cuda_error",
            "cudaErrorIllegalAddress",
            T0 + 5,
            "CUDA error: an illegal memory access",
            source="app.log",
        ),
    ]
    report = diagnose_evidence(xid_first, catalog)
    assert report.top is not None and report.top.id == "xid_31_mmu_fault"
    assert [c.id for c in report.causes] == ["xid_31_mmu_fault"]


def test_untimed_paste_keeps_line_order_within_one_log(catalog: Catalog) -> None:
    """With no timestamps, a program's lines keep their order, and so do the kernel's: a collective timeout
    printed before the illegal access is not explained by it; a fatal AER error before Xid 79 is the cause,
    after it a consequence."""
    ima = log(
        "cuda_error", "cudaErrorIllegalAddress", None, "CUDA error: an illegal memory access", source="paste"
    )
    timeout = log(
        "nccl_timeout",
        None,
        None,
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600001ms",
        source="paste",
    )
    assert [c.id for c in diagnose_evidence([ima, timeout], catalog).causes] == ["illegal_memory_access"]
    assert [c.id for c in diagnose_evidence([timeout, ima], catalog).causes] == [
        "illegal_memory_access",
        "nccl_timeout",
    ]
    aer = log(
        "pcie_aer",
        "fatal",
        None,
        "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received",
        source="paste",
        severity="fatal",
    )
    xid79 = log(
        "xid", 79, None, "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.", source="paste"
    )
    assert diagnose_evidence([aer, xid79], catalog).top.id == "pcie_link_degraded"  # type: ignore[union-attr]
    assert diagnose_evidence([xid79, aer], catalog).top.id == "xid_79_fallen_off_bus"  # type: ignore[union-attr]


def test_untimed_paste_does_not_order_the_kernel_log_against_a_program(catalog: Catalog) -> None:
    """A person pastes the error they saw, then what dmesg showed: across the two logs the paste's order is
    not time, so the driver's report of the fault (Xid 13) is the cause in either order."""
    evidence = [
        log("xid", 13, None, "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception", source="paste"),
        log(
            "cuda_error",
            "cudaErrorIllegalAddress",
            None,
            "CUDA error: an illegal memory access",
            source="paste",
        ),
    ]
    for order in (evidence, evidence[::-1]):
        report = diagnose_evidence(order, catalog)
        assert [c.id for c in report.causes] == ["xid_13_graphics_exception"]
        assert "illegal_memory_access" in {s.id for s in report.causes[0].explained_symptoms}


def test_desktop_xid_31_is_not_paged(catalog: Catalog) -> None:
    evidence = [
        log(
            "xid",
            31,
            T0,
            "NVRM: Xid (PCI:0000:01:00): 31, pid=1811, name=Xorg, Ch 00000010, MMU Fault",
            process="Xorg",
        )
    ]
    report = diagnose_evidence(evidence, catalog)
    assert report.causes == ()
    assert report.verdict == NO_CAUSE
    assert report.anomalies and report.anomalies[0].key == "xid"


def test_nothing_matching_gives_no_cause_and_the_strongest_anomalies(catalog: Catalog) -> None:
    evidence = [
        log("log_line", "error", T0 + i, f"ERROR something odd {i}", source="app.log") for i in range(3)
    ]
    evidence.append(log("python_exception", "KeyError", T0 + 9, "KeyError: 'foo'", source="app.log"))
    report = diagnose_evidence(evidence, catalog)
    assert report.top is None
    assert {a.key for a in report.anomalies} == {"log_line", "python_exception"}
    assert report.to_dict()["top_cause"] is None


def test_a_failing_signature_is_recorded_and_the_run_goes_on(catalog: Catalog) -> None:
    broken = parse_signature(
        {
            "id": "always_broken",
            "title": "t",
            "severity": "low",
            "scope": "global",
            "explanation": "e",
            "remediation": [],
            "require": [{"key": "xid"}],
        }
    )

    class Exploding(type(broken)):  # type: ignore[misc]
        def evaluate(self, indexed):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    exploding = Exploding(**{f: getattr(broken, f) for f in broken.__dataclass_fields__})
    cat = Catalog(signatures=(exploding, *catalog.signatures), problems=())
    report = diagnose_evidence(
        [log("xid", 79, T0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.")], cat
    )
    assert report.top is not None and report.top.id == "xid_79_fallen_off_bus"
    assert any(p.startswith("[always_broken] RuntimeError: boom") for p in report.problems)


def test_a_broken_catalog_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    good = Path(load_catalog().signatures[0].id)
    src = next(Path(__file__).resolve().parents[2].glob(f"rca/catalog/{good}.toml"))
    (tmp_path / src.name).write_text(src.read_text())
    (tmp_path / "bad_one.toml").write_text('id = "bad_one"\ntitle = "x"\nunknown_field = 1\n')
    (tmp_path / "bad_regex.toml").write_text(
        src.read_text().replace(f'id = "{good}"', 'id = "bad_regex"')
        + '\n[[rule_out]]\nkey = "x"\ntext = "(["\n'
    )
    loaded = load_catalog(tmp_path.glob("*.toml"))
    assert [s.id for s in loaded.signatures] == [str(good)]
    assert len(loaded.problems) == 2 and all(p.startswith("[bad_") for p in loaded.problems)


def test_entity_alignment_joins_pci_uuid_and_index() -> None:
    evidence = [
        metric(
            gpu_names.GPU_TEMPERATURE.native, 60, T0, gpu=2, uuid="GPU-abc", pci_bus_id="00000000:3B:00.0"
        ),
        log(
            "xid",
            48,
            T0 + 1,
            "NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error",
            pci="0000:3b:00",
        ),
    ]
    index = EntityIndex(evidence)
    assert index.gpu_group(0) == index.gpu_group(1)
    report = diagnose_evidence(evidence)
    assert report.top is not None and report.top.id == "xid_48_double_bit_ecc"
    assert report.top.entity["gpu_index"] == 2 and report.top.entity["gpu_uuid"] == "GPU-abc"
    assert report.top.entity["host"] == "node-1"
    assert "nvidia-smi -r -i 2" in " ".join(report.top.remediation)
    assert normalise_pci("PCI:0000:3B:00") == normalise_pci("00000000:3b:00.0") == "3b:00"


def test_thermal_throttling_names_the_hot_gpu_only(catalog: Catalog) -> None:
    evidence = []
    for i in range(10):
        t = T0 + 10 * i
        for g in range(4):
            hot = g == 1
            evidence.append(
                metric(gpu_names.GPU_TEMPERATURE.native, 91 if hot else 62, t, gpu=g, uuid=f"GPU-{g}")
            )
            evidence.append(
                metric(
                    gpu_names.CLOCK_EVENT_ACTIVE.native,
                    1 if hot else 0,
                    t,
                    gpu=g,
                    uuid=f"GPU-{g}",
                    reason="hw_thermal_slowdown",
                )
            )
    report = diagnose_evidence(evidence, catalog)
    assert [c.id for c in report.causes] == ["thermal_throttling"]
    assert report.top is not None and report.top.entity["gpu_index"] == 1
    assert report.top.confidence == pytest.approx(0.8)


def _oom(
    t: float,
    tried: float,
    allocated: float,
    reserved_unallocated: float,
    total: float = 80 * GIB,
    raw: str = "torch.OutOfMemoryError: CUDA out of memory.",
) -> Evidence:
    return log(
        "cuda_oom",
        None,
        t,
        raw,
        source="app.log",
        tried=tried,
        allocated=allocated,
        reserved_unallocated=reserved_unallocated,
        total=total,
        gpu_index=0,
    )


def test_oom_kinds_are_told_apart(catalog: Catalog) -> None:
    capacity = [_oom(T0, 6 * GIB, 74 * GIB, 0.2 * GIB)]
    assert diagnose_evidence(capacity, catalog).top.id == "cuda_oom_capacity"  # type: ignore[union-attr]
    fragmented = [_oom(T0, 0.02 * GIB, 70 * GIB, 5.4 * GIB)]
    report = diagnose_evidence(fragmented, catalog)
    assert report.top is not None and report.top.id == "cuda_oom_fragmentation"
    assert {s.id for s in report.top.explained_symptoms if s.id} == {"cuda_oom_capacity"}
    growth = [
        metric(gpu_names.MEMORY_USED.native, (20 + 6 * i) * GIB, T0 + 60 * i, gpu=0, uuid="GPU-0")
        for i in range(10)
    ]
    leak = [*growth, _oom(T0 + 600, 0.05 * GIB, 78 * GIB, 0.1 * GIB)]
    report = diagnose_evidence(leak, catalog)
    assert report.top is not None and report.top.id == "cuda_oom_leak"
    assert report.problems == ()
    swap = [
        log(
            "model_load",
            41.0,
            T0,
            "hot swap: loading model llama-8b-v2 next to llama-8b-v1",
            source="server.log",
            model="llama-8b-v2",
        ),
        _oom(T0 + 30, 2 * GIB, 75 * GIB, 0.1 * GIB),
    ]
    assert diagnose_evidence(swap, catalog).top.id == "cuda_oom_hot_swap"  # type: ignore[union-attr]
    swap_long_before = [swap[0], _oom(T0 + 5000, 2 * GIB, 75 * GIB, 0.1 * GIB)]
    assert diagnose_evidence(swap_long_before, catalog).top.id == "cuda_oom_capacity"  # type: ignore[union-attr]


def test_a_few_preemptions_do_not_page_but_a_storm_with_a_full_cache_does(catalog: Catalog) -> None:
    usage = serving_names.KV_CACHE_USAGE.native
    calm = [
        log("vllm_preemption", None, T0 + i, "WARNING Sequence group 3 is preempted", source="vllm.log")
        for i in range(3)
    ]
    calm += [metric(usage, 0.6, T0 + i * 10, model_name="m") for i in range(6)]
    assert diagnose_evidence(calm, catalog).causes == ()
    storm = [
        log("vllm_preemption", None, T0 + i, "WARNING Sequence group is preempted", source="vllm.log")
        for i in range(40)
    ]
    storm += [metric(usage, 0.99, T0 + i * 10, model_name="m") for i in range(6)]
    assert diagnose_evidence(storm, catalog).top.id == "kv_cache_exhausted"  # type: ignore[union-attr]


def test_report_is_json_and_deterministic(catalog: Catalog) -> None:
    evidence = [
        log("xid", 94, T0, "NVRM: Xid (PCI:0000:3b:00): 94, Contained: SM (0x1).", pci="0000:3b:00"),
        log(
            "cuda_error",
            "cudaErrorECCUncorrectable",
            T0 + 1,
            "CUDA error: uncorrectable ECC error encountered",
            source="app.log",
        ),
    ]
    first = json.dumps(diagnose_evidence(evidence, catalog).to_dict(), sort_keys=True)
    second = json.dumps(diagnose_evidence(list(evidence), catalog).to_dict(), sort_keys=True)
    assert first == second
    data = json.loads(first)
    cause = data["causes"][0]
    assert cause["id"] == "xid_94_contained_ecc"
    assert 0 < cause["confidence"] <= 1
    assert {"time", "source", "text"} <= set(cause["evidence"][0])
    assert cause["evidence"][0]["time_iso"].endswith("Z")
    assert cause["remediation"] and cause["explained_symptoms"][0]["key"] == "cuda_error"
    markdown = diagnose_evidence(evidence, catalog).to_markdown()
    assert "xid_94_contained_ecc" in markdown and "Remediation" in markdown


def test_a_fault_on_one_host_explains_the_job_wide_timeouts_on_the_others(catalog: Catalog) -> None:
    evidence = [
        log(
            "xid",
            48,
            T0,
            "NVRM: Xid (PCI:0000:bb:00): 48, An uncorrectable double bit error",
            entity=Entity(host="node-a"),
            pci="0000:bb:00",
        )
    ]
    for rank, host in enumerate(("node-b", "node-c", "node-d")):
        evidence.append(
            log(
                "nccl_timeout",
                None,
                T0 + 600,
                f"[Rank {rank}] Watchdog caught collective operation timeout",
                source=f"rank{rank}.log",
                entity=Entity(host=host),
            )
        )
    report = diagnose_evidence(evidence, catalog)
    assert [c.id for c in report.causes] == ["xid_48_double_bit_ecc"]
    assert report.top is not None and report.top.entity["host"] == "node-a"
    assert [s.id for s in report.top.explained_symptoms if s.id] == ["nccl_timeout"]
    # the timeouts' own entity keeps only what all ranks agree on: no host
    only_timeouts = diagnose_evidence(evidence[1:], catalog)
    assert only_timeouts.top is not None and "host" not in only_timeouts.top.entity


def test_a_generic_signature_never_hides_a_specific_cause(catalog: Catalog) -> None:
    # The crash loop is recorded before the container's own log reveals the missing kernel image; the
    # crash loop must not swallow the specific cause just because it came first.
    evidence = [
        Evidence(
            kind=EvidenceKind.EVENT,
            key="k8s_pod_status",
            value="CrashLoopBackOff",
            source="pods.json",
            time=T0,
            entity=Entity(pod="p", namespace="n"),
            raw="CrashLoopBackOff",
        ),
        log(
            "python_exception",
            "UserWarning",
            T0 + 30,
            "UserWarning: NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch "
            "installation.",
            source="app.log",
        ),
    ]
    report = diagnose_evidence(evidence, catalog)
    assert report.top is not None and report.top.id == "cuda_arch_unsupported"


def test_serving_signatures_align_by_model(catalog: Catalog) -> None:
    usage, waiting = serving_names.KV_CACHE_USAGE.native, serving_names.NUM_REQUESTS_WAITING.native

    def m(key: str, value: float, t: float, model: str) -> Evidence:
        return Evidence(
            kind=EvidenceKind.METRIC,
            key=key,
            value=value,
            source="prom",
            time=t,
            entity=Entity(model=model),
            attrs={"labels": {"model_name": model}},
        )

    # model a: KV cache full; model b: a long queue. Neither alone is kv_cache_exhausted with preemptions.
    evidence = [m(usage, 0.99, T0 + 15 * i, "a") for i in range(5)]
    evidence += [m(waiting, 40, T0 + 15 * i, "b") for i in range(5)]
    evidence += [m(serving_names.NUM_PREEMPTIONS.native, 10 + 30 * i, T0 + 15 * i, "b") for i in range(5)]
    report = diagnose_evidence(evidence, catalog)
    assert [c.id for c in report.causes] == ["queue_saturation"]
    assert report.top is not None and report.top.entity == {"model": "b"}


def test_diagnose_is_the_cli_as_one_call() -> None:
    case = Path(__file__).resolve().parent / "incidents" / "xid_79_fallen_off_bus"
    report = diagnose(DiagnoseInputs(logs=[str(case)]))
    assert report.top is not None and report.top.id == "xid_79_fallen_off_bus"
    assert report.sources and report.problems == ()


def test_nvml_gpu_lost_alone_is_a_gpu_off_the_bus_but_not_inside_a_container(catalog: Catalog) -> None:
    lost = log(
        "nvml_error",
        "gpu_lost",
        T0,
        "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.",
    )
    assert diagnose_evidence([lost], catalog).top.id == "xid_79_fallen_off_bus"  # type: ignore[union-attr]
    in_container = log("nvml_error", "gpu_lost", T0, "container runtime: NVML reports GPU lost in cgroup")
    assert diagnose_evidence([in_container], catalog).top.id == "container_gpu_access_lost"  # type: ignore[union-attr]
