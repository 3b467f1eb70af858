"""Log formats the first parsers missed: tracebacks inside JSON log fields (the serving stack's `exc`),
Triton Inference Server glog lines and TensorRT's logger, kernel oopses, Go/klog timestamps, and
repeat counting of identical untimed lines (the counts signatures compare against)."""

# ruff: noqa: E501  (real log lines are longer than the code line limit)

from __future__ import annotations

import calendar
import json
from pathlib import Path

from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.evidence import Evidence
from gpuobs.rca import keys
from gpuobs.rca.parsers import parse_text
from gpuobs.rca.parsers.prefix import parse_timestamp, split_prefix

INCIDENTS = Path(__file__).parent / "incidents"
GiB = 1 << 30


def _epoch(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


def _diagnose(path: Path) -> list[str]:
    res = CliRunner().invoke(app, ["diagnose", "--logs", str(path), "--json"])
    assert res.exit_code in (0, 1), res.output[-500:]
    return [c["id"] for c in json.loads(res.stdout)["causes"]]


def _of(evidence: list[Evidence], key: str) -> list[Evidence]:
    return [e for e in evidence if e.key == key]


# --- 1. JSON log lines: `msg` and the `exc` traceback ----------------------------------------------------
def _swap_lines() -> list[str]:
    """The swap's own two lines from the real capture (hot-swap loading, hot-swap failed with `exc`)."""
    capture = INCIDENTS / "cuda_oom_hot_swap_warmup_failed" / "gpuobs-serve.jsonl"
    lines = [ln for ln in capture.read_text().splitlines() if json.loads(ln)["msg"].startswith("hot-swap")]
    assert [json.loads(ln)["msg"] for ln in lines] == ["hot-swap loading", "hot-swap failed"]
    assert "CUDA out of memory" not in json.loads(lines[1])["msg"]
    return lines


def test_exc_field_of_a_json_line_is_parsed_with_the_line_time_and_entity() -> None:
    lines = _swap_lines()
    failed = json.loads(lines[1])
    ev = parse_text("\n".join(lines))
    (oom,) = _of(ev, keys.CUDA_OOM)
    assert oom.attrs["embedded_in"] == "exc"
    assert oom.attrs["line"] == 2 and oom.attrs["embedded_line"] > 1
    assert oom.attrs["tried"] == 2 * GiB and oom.attrs["free"] == 20 * (1 << 20)
    assert oom.entity.model == failed["model_id"] and oom.entity.gpu_index == 0
    assert oom.time == parse_timestamp(failed["ts"])
    assert "time_inferred" not in oom.attrs
    # the message itself stays evidence of the swap (the hot-swap signature reads it)
    assert [e.attrs["line"] for e in _of(ev, keys.LOG_LINE)] == [2]
    assert [e.value for e in _of(ev, keys.PYTHON_EXCEPTION)] == ["RuntimeError"]


def test_hot_swap_oom_is_named_from_the_json_log_alone(tmp_path: Path) -> None:
    log = tmp_path / "serve.jsonl"
    log.write_text("\n".join(_swap_lines()) + "\n")
    causes = _diagnose(log)
    assert causes[:1] == ["cuda_oom_hot_swap"], causes


def test_exc_merges_into_the_record_of_the_structured_fields() -> None:
    """`cuda_error_code` already makes a cuda_oom record; the traceback adds its figures to it, and
    `device_id: "cuda:1"` / `model_id` land in the entity."""
    line = json.dumps(
        {
            "ts": "2026-11-29T12:30:01.500Z",
            "level": "error",
            "msg": "model step failed",
            "logger": "gpuobs.serving.engine",
            "model_id": "llama-70b",
            "device_id": "cuda:1",
            "cuda_error_code": 2,
            "exc": "Traceback (most recent call last):\n  File \"engine.py\", line 10, in step\n    out = self.model(x)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 139.80 GiB of which 100.00 MiB is free.",
        }
    )
    ev = parse_text(line)
    (oom,) = _of(ev, keys.CUDA_OOM)
    assert oom.entity.model == "llama-70b" and oom.entity.gpu_index == 1
    assert oom.attrs["tried"] == int(1.5 * GiB) and oom.attrs["embedded_in"] == "exc"
    assert oom.time == _epoch(2026, 11, 29, 12, 30, 1) + 0.5
    (exc,) = _of(ev, keys.PYTHON_EXCEPTION)
    assert exc.value == "torch.OutOfMemoryError" and exc.attrs["cuda_error_code"] == 2
    assert exc.entity.gpu_index == 1


# --- 2. Triton Inference Server and TensorRT ---------------------------------------------------------------
def test_triton_failed_load_with_oom_reason() -> None:
    text = "E1129 12:30:01.123456 1 model_lifecycle.cc:638] failed to load 'resnet50' version 1: Internal: unable to create TensorRT context: out of memory"
    ev = parse_text(text, year=2026)
    (load,) = _of(ev, keys.MODEL_LOAD)
    assert load.value is None and load.attrs["failed"] is True and load.attrs["version"] == 1
    assert load.entity.model == "resnet50" and load.attrs["level"] == "error"
    assert load.time == _epoch(2026, 11, 29, 12, 30, 1) + 0.123456
    (oom,) = _of(ev, keys.CUDA_OOM)
    assert oom.attrs["framework"] == "triton" and oom.entity.model == "resnet50"


def test_triton_failed_load_without_oom_is_a_load_failure_only() -> None:
    text = "E0915 08:00:00.000001 1 model_lifecycle.cc:638] failed to load 'bert' version 3: Not found: unable to load shared library: libnvinfer_plugin.so.10"
    ev = parse_text(text, year=2026)
    assert [e.key for e in ev] == [keys.MODEL_LOAD]
    assert ev[0].attrs["message"].startswith("Not found") and ev[0].attrs["version"] == 3


def test_triton_load_time_from_loading_and_successfully_loaded() -> None:
    text = (
        "I1129 12:29:50.100000 1 model_lifecycle.cc:461] loading: detector:1\n"
        "I1129 12:29:50.213554 1 tensorrt.cc:65] TRITONBACKEND_Initialize: tensorrt\n"
        "I1129 12:36:10.350000 1 model_lifecycle.cc:818] successfully loaded 'detector' version 1\n"
    )
    (load,) = _of(parse_text(text, year=2026), keys.MODEL_LOAD)
    assert abs(float(load.value) - 380.25) < 1e-6  # type: ignore[arg-type]
    assert load.entity.model == "detector"
    # newer Triton omits the version in the success line
    newer = text.replace("loading: detector:1", "loading: detector:2").replace(" version 1", "")
    (load2,) = _of(parse_text(newer, year=2026), keys.MODEL_LOAD)
    assert abs(float(load2.value) - 380.25) < 1e-6  # type: ignore[arg-type]


def test_tensorrt_error_codes() -> None:
    trt = parse_text(
        "[11/29/2026-12:30:01] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)\n"
        "[11/29/2026-12:30:02] [TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime (out of memory)\n"
        "E1129 12:30:03.000000 87 logging.cc:43] 1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization (Serialization assertion magicTagRead == kMAGIC_TAG failed.Magic tag does not match)\n"
        "[11/29/2026-12:30:04] [E] Error[10]: [optimizer.cpp::computeCosts::3626] Error Code 10: Internal Error (Could not find any implementation for node {ForeignNode[box_outputs/reshape]}.)\n",
        year=2026,
    )
    ooms = _of(trt, keys.CUDA_OOM)
    assert [(e.attrs["framework"], e.attrs["trt_error"], e.time) for e in ooms] == [
        ("tensorrt", "OutOfMemory", _epoch(2026, 11, 29, 12, 30, 1)),
        ("tensorrt", "Cuda Runtime", _epoch(2026, 11, 29, 12, 30, 2)),
    ]
    (incompatible,) = _of(trt, keys.TENSORRT_ENGINE_INCOMPATIBLE)
    assert incompatible.time == _epoch(2026, 11, 29, 12, 30, 3)
    assert not [e for e in trt if e.attrs.get("line") == 4 and e.key != keys.LOG_LINE]


def test_triton_tensorrt_oom_case_is_named(tmp_path: Path) -> None:
    causes = _diagnose(INCIDENTS / "cuda_oom_capacity_triton_tensorrt" / "tritonserver.log")
    assert causes[:1] == ["cuda_oom_capacity"], causes


# --- 3. kernel oopses ---------------------------------------------------------------------------------------
def test_oops_records() -> None:
    text = (
        "[  123.456000] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
        "[  123.456100] #PF: supervisor read access in kernel mode\n"
        "[  123.456200] Oops: 0000 [#1] SMP NOPTI\n"
        "[  123.456300] CPU: 12 PID: 4242 Comm: python3 Tainted: P           OE     6.5.0 #1\n"
        "[  200.000000] general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#2] SMP NOPTI\n"
        "[  300.000000] BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:123]\n"
        "[  300.500000] BUG: scheduling while atomic: swapper/0/0/0x00000002\n"
    )
    ev = parse_text(text)
    panics = _of(ev, keys.KERNEL_PANIC)
    # BUG, Oops and a general protection fault within 60 lines are one report: one record, with the
    # CPU line's process
    assert panics[0].attrs["kind"] == "oops" and panics[0].attrs["process"] == "python3"
    assert panics[0].attrs["oops"][:2] == ["BUG: kernel NULL pointer dereference", "Oops: 0000"]
    assert panics[0].attrs["oops"][2].startswith("general protection fault, probably for non-canonical")
    assert len(panics) == 1
    # a soft lockup and a scheduling-while-atomic warning are not oopses
    assert [e.key for e in ev if e.attrs.get("line", 0) >= 6] == [keys.SOFT_LOCKUP]


def test_user_space_general_protection_fault_is_not_an_oops() -> None:
    text = (
        "[ 5123.456789] traps: nvidia-smi[48211] general protection fault ip:7f2a1c0e1b2d sp:7ffd9b2c3e40 error:0 in libnvidia-ml.so.580.65.06[7f2a1be00000+1f5000]\n"
        "[ 5200.000001] general protection fault: 0000 [#1] PREEMPT SMP NOPTI\n"
    )
    panics = _of(parse_text(text), keys.KERNEL_PANIC)
    assert [(e.attrs["line"], e.attrs["oops"]) for e in panics] == [(2, ["general protection fault: 0000 [#1]"])]


def test_gpud_pstore_erst_record_is_an_oops(compat_dir: Path) -> None:
    ev = parse_text((compat_dir / "gpud" / "pkg__pstore__testdata__dmesg-erst.txt").read_text())
    (panic,) = _of(ev, keys.KERNEL_PANIC)
    assert panic.attrs["oops"] == ["BUG: unable to handle kernel NULL pointer dereference", "Oops: 0002"]
    assert (panic.attrs["process"], panic.attrs["pid"]) == ("bash", 1899)


# --- 4. Go log and klog timestamps ---------------------------------------------------------------------------
def test_go_log_timestamps() -> None:
    base = _epoch(2026, 11, 29, 12, 30, 1)
    assert parse_timestamp("2026/11/29 12:30:01") == base
    assert parse_timestamp("2026/11/29 12:30:01.123456") == base + 0.123456
    pre = split_prefix("2026/11/29 12:30:01.5 Starting dcgm-exporter", year=None)
    assert (pre.time, pre.message) == (base + 0.5, "Starting dcgm-exporter")
    klog = split_prefix("I1129 12:30:01.123456       1 main.go:256] Retrieving plugins.", year=2026)
    assert (klog.time, klog.level, klog.message) == (base + 0.123456, "info", "Retrieving plugins.")
    (nvml,) = _of(
        parse_text("2026/11/29 12:30:01.250000 Failed to initialize NVML: Driver/library version mismatch"),
        keys.NVML_ERROR,
    )
    assert nvml.time == base + 0.25 and nvml.value == "driver_library_mismatch"
    (klog_err,) = _of(
        parse_text("E1129 12:30:01.000001       1 main.go:132] failed to initialize NVML: ERROR_UNKNOWN", year=2026),
        keys.NVML_ERROR,
    )
    assert klog_err.time == base + 0.000001


def test_onnxruntime_logger_tag_gives_every_parser_the_line_level() -> None:
    """onnxruntime's own tag ("[W:onnxruntime:Default, file:line func]", letters V/I/W/E/F, the logger id
    possibly empty) is peeled by the shared splitter, so every parser sees the level, not only TensorRT's."""
    base = _epoch(2019, 9, 14, 1, 19, 53)
    warn = split_prefix(
        "2019-09-14 01:19:53.5 [W:onnxruntime:test, tensorrt_execution_provider.h:28 log] Falling back", year=None
    )
    assert (warn.time, warn.level, warn.message) == (base + 0.5, "warning", "Falling back")
    levels = [
        split_prefix(f"[{letter}:onnxruntime:, inference_session.cc:1785 operator()] m").level for letter in "VIWEF"
    ]
    assert levels == ["debug", "info", "warning", "error", "fatal"]
    # not onnxruntime's tag: another logger's name; glog's tag (its letter, then the date) is still glog's
    assert split_prefix("[W:tensorflow:Default, x.cc:1 f] m").level is None
    glog = split_prefix("[W1010 12:00:00.000000 ProcessGroupNCCL.cpp:4115] m", year=2026)
    assert (glog.level, glog.message) == ("warning", "m")
    parse = "While parsing node number 12 [OneHot -> \"/Gather_output_0\"]: Plugin not found"
    tag = "[{}:onnxruntime:Default, tensorrt_execution_provider.h:53 log] "
    assert not _of(parse_text(tag.format("W") + parse), keys.TENSORRT_PARSE_ERROR)
    (err,) = _of(parse_text(tag.format("E") + parse), keys.TENSORRT_PARSE_ERROR)
    assert err.attrs["node"] == 12 and err.attrs["message"].startswith("While parsing node number 12")


# --- 5. repeat counting ----------------------------------------------------------------------------------------
_GRPC_LINE = 'grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with: status = StatusCode.DEADLINE_EXCEEDED details = "Deadline Exceeded">'


def test_identical_untimed_grpc_lines_count_each() -> None:
    ev = parse_text("\n".join([_GRPC_LINE] * 6))
    (grpc,) = _of(ev, keys.GRPC_STATUS)
    assert grpc.attrs["repeats"] == 6
    (exc,) = _of(ev, keys.PYTHON_EXCEPTION)
    assert exc.attrs["repeats"] == 6


def test_multi_line_grpc_error_counts_once() -> None:
    one_error = (
        "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n"
        "\tstatus = StatusCode.DEADLINE_EXCEEDED\n"
        '\tdetails = "Deadline Exceeded"\n'
        '\tdebug_error_string = "UNKNOWN:Deadline Exceeded {grpc_status:4, created_time:"2026-11-29T12:30:01.1+00:00"}"\n'
        ">\n"
    )
    (grpc,) = _of(parse_text(one_error), keys.GRPC_STATUS)
    assert grpc.attrs.get("repeats", 1) == 1
    (three,) = _of(parse_text(one_error * 3), keys.GRPC_STATUS)
    assert three.attrs["repeats"] == 3


def _confidence(path: Path, cause: str) -> float:
    res = CliRunner().invoke(app, ["diagnose", "--logs", str(path), "--json"])
    return float(next(c["confidence"] for c in json.loads(res.stdout)["causes"] if c["id"] == cause))


def test_count_threshold_of_grpc_deadline_signature(tmp_path: Path) -> None:
    """A run of 3 deadline errors is the full-weight grpc_deadline_exceeded; fewer (one client traceback
    pasted) still name it, from the lower-based `single` variant."""
    log = tmp_path / "client.log"
    log.write_text("\n".join([_GRPC_LINE] * 2) + "\n")
    assert _diagnose(log)[:1] == ["grpc_deadline_exceeded"]
    few = _confidence(log, "grpc_deadline_exceeded")
    log.write_text("\n".join([_GRPC_LINE] * 3) + "\n")
    assert _diagnose(log)[:1] == ["grpc_deadline_exceeded"]
    assert _confidence(log, "grpc_deadline_exceeded") > few


def test_vllm_v0_throttled_preemption_warnings_count_what_they_stand_for() -> None:
    """vLLM V0 warns on preemptions 1, 51, 101...: the records' repeats add up to the cumulative count."""
    log = (INCIDENTS / "kv_cache_exhausted_v0_throttled_warnings" / "vllm.log").read_text()
    pre = _of(parse_text(log, year=2026), keys.VLLM_PREEMPTION)
    assert [(e.value, e.attrs.get("repeats", 1)) for e in pre] == [(1, 1), (51, 50), (101, 50)]
    # consecutive warnings (older vLLM, one per preemption) stay one each; a restart resets the counter
    text = "\n".join(
        f"WARNING 11-29 21:04:1{i} [scheduler.py:1754] Sequence group cmpl-{i} is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. total_num_cumulative_preemption={n}"
        for i, n in enumerate((1, 2, 3, 1))
    )
    assert [e.attrs.get("repeats", 1) for e in _of(parse_text(text, year=2026), keys.VLLM_PREEMPTION)] == [1, 1, 1, 1]


def test_throttled_preemption_case_is_named(tmp_path: Path) -> None:
    case = INCIDENTS / "kv_cache_exhausted_v0_throttled_warnings"
    res = CliRunner().invoke(
        app, ["diagnose", "--logs", str(case / "vllm.log"), "--logs", str(case / "metrics.prom"), "--json"]
    )
    assert res.exit_code == 0, res.output[-500:]
    assert [c["id"] for c in json.loads(res.stdout)["causes"]][:1] == ["kv_cache_exhausted"]


# --- 6. the anchor scan: Aho-Corasick (ahocorasick-rs) and the str.find fallback agree ------------------------
def test_automaton_and_find_scans_find_the_same_lines() -> None:
    import ahocorasick_rs  # noqa: F401 - the declared dependency is installed
    from support.rca_corpus import make_log

    from gpuobs.rca.parsers.lines import _candidate_lines

    texts = [make_log(20000, 0.2), make_log(5000, 0.0)]
    texts.append(texts[1].replace("health check ok", "health check ok \u2714 \u00b0C"))  # not ASCII
    texts += [p.read_text(errors="replace") for p in sorted(INCIDENTS.rglob("*")) if p.is_file() and p.suffix in (".log", ".jsonl", ".txt")]
    for text in texts:
        lines = text.splitlines()
        fast = _candidate_lines(lines)
        assert fast == _candidate_lines(lines, automaton=False)
    assert len(_candidate_lines(texts[0].splitlines())) > 3000


def test_one_oom_line_with_structured_code_is_one_record() -> None:
    """The serving engine's OOM line says the OOM twice (PyTorch's text and cuda_error_code 2): one record,
    so three failed steps count three."""
    capture = INCIDENTS / "cuda_oom_hot_swap_serving" / "gpuobs-serve.jsonl"
    steps = [ln for ln in capture.read_text().splitlines() if '"event": "cuda_oom"' in ln]
    assert len(steps) == 3
    (oom,) = _of(parse_text("\n".join(steps)), keys.CUDA_OOM)
    assert oom.attrs["framework"] == "pytorch" and oom.attrs["cuda_error_code"] == 2
    assert oom.attrs["repeats"] == 3


def test_the_drivers_adapter_init_failure_is_a_fact_in_every_form_it_is_printed() -> None:
    """Older drivers print RmInitAdapter's failure bare, current ones under the GPU's PCI address (RM's own
    "RmInitAdapter failed!" and nv.c's "rm_init_adapter failed"), and a GSP that never booted fails it too;
    each is the driver failing to bring the GPU up, read by the exact tier, a timestamp or not. Lines that
    only mention the function are not."""
    failed = [
        "NVRM: RmInitAdapter failed! (0x30:0xffff:660)",
        "NVRM: rm_init_adapter failed for device bearing minor number 0",
        "kernel: [ 2108.026787] NVRM: rm_init_adapter(0) failed",
        "NVRM: GPU 0000:57:00.0: RmInitAdapter failed! (0x22:0x56:897)",
        "[  113.675130] NVRM: GPU 0000:00:06.0: rm_init_adapter failed, device minor number 0",
        # GSP-RM never booted, so the adapter cannot come up
        "NVRM: kgspBootstrap_GH100: GSP-FMC reported an error while attempting to boot GSP: 0xffffffff",
        "[   36.077473] NVRM kgspBootstrapRiscvOSEarly_GH100: Timeout waiting for GSP target mask release.",
    ]
    for line in failed:
        records = _of(parse_text(line + "\n", "kern.log"), keys.DRIVER_ERROR)
        assert [r.value for r in records] == ["nvrm_init"], line
    for line in (
        "NVRM: GPU 0000:57:00.0: RmInitAdapter succeeded after retry",
        "RmInitAdapter failed twice?",
        "NVRM: kgspBootstrap_GH100: GSP-RM booted in 1203 ms",
    ):
        assert _of(parse_text(line + "\n", "notes.log"), keys.DRIVER_ERROR) == [], line
