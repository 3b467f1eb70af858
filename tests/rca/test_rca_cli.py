"""`gpuobs diagnose`: the terminal report, --json, --markdown, stdin, extra catalogs and exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.errors import InputError
from gpuobs.rca import TimeWindow

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "rca" / "incidents"
XID79 = CASES / "xid_79_fallen_off_bus"


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, COLUMNS="160", NO_COLOR="1"),
    )


def test_help_has_an_example() -> None:
    run = CliRunner().invoke(app, ["diagnose", "--help"], env={"COLUMNS": "160"})
    assert run.exit_code == 0
    assert "gpuobs diagnose --logs" in run.stdout and "Exit codes" in run.stdout


def test_terminal_report_leads_with_the_top_cause_then_chain_fix_and_candidates() -> None:
    run = CliRunner().invoke(
        app,
        [
            "diagnose",
            "--logs",
            str(XID79 / "dmesg.txt"),
            "--logs",
            str(XID79 / "worker-3.log"),
            "--logs",
            str(CASES / "nccl_timeout" / "rank2.log"),
        ],
        env={"COLUMNS": "200"},
    )
    assert run.exit_code == 0, run.stdout
    out = run.stdout
    top = out.index("TOP CAUSE")
    assert out.index("GPU fell off the bus (Xid 79)") > top
    assert "confidence 0.9" in out
    chain = out.index("Evidence chain")
    assert "2026-11-29T21:04:52.000Z" in out[chain:] and "pci=0000:3b:00" in out[chain:]
    assert out.index("Remediation") > chain
    assert "nvidia-smi -q -i 0000:3b:00" in out
    # The NCCL timeout happened 15 hours before the Xid, so the Xid cannot explain it: it stays a
    # separate candidate, listed after the top cause.
    assert out.index("Other candidates") > out.index("Remediation")
    assert "nccl_timeout" in out[out.index("Other candidates") :]


def test_json_shape_and_exit_zero() -> None:
    run = CliRunner().invoke(app, ["diagnose", "--json", "--logs", str(XID79)])
    assert run.exit_code == 0
    data = json.loads(run.stdout)
    cause = data["causes"][0]
    assert set(cause) >= {
        "id",
        "title",
        "confidence",
        "entity",
        "evidence",
        "remediation",
        "explained_symptoms",
    }
    assert cause["id"] == "xid_79_fallen_off_bus" and 0 < cause["confidence"] <= 1
    assert cause["entity"]["pci_bus_id"] == "0000:3b:00"
    assert all({"time", "source", "text"} <= set(e) for e in cause["evidence"])
    assert any("unspecified launch failure" in s["text"] for s in cause["explained_symptoms"])
    assert data["top_cause"] == "xid_79_fallen_off_bus" and data["evidence_count"] > 0


def test_no_known_signature_exits_one_and_shows_anomalies(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("2026-11-29 10:00:00,000 ERROR [rank0]:[/x] payment backend returned 502\n" * 3)
    run = CliRunner().invoke(app, ["diagnose", "--logs", str(log)], env={"COLUMNS": "160"})
    assert run.exit_code == 1
    assert "No known failure signature" in run.stdout and "Strongest anomalies" in run.stdout
    assert "[/x] payment backend returned 502" in run.stdout  # log text is never parsed as rich markup


def test_markdown_file(tmp_path: Path) -> None:
    md = tmp_path / "incident.md"
    run = CliRunner().invoke(
        app, ["diagnose", "--json", "--logs", str(CASES / "nccl_shm_unavailable"), "--markdown", str(md)]
    )
    assert run.exit_code == 0
    text = md.read_text()
    assert text.startswith("# gpuobs diagnose") and "`nccl_shm_unavailable`" in text and "Remediation" in text


def test_markdown_to_stdout_with_notes_as_a_real_process(tmp_path: Path) -> None:
    """`--markdown -` prints the Markdown report in place of the table (exit code as ever); its notes say what
    was not read. With --json both would write to stdout: one line, exit 2, nothing written."""
    unread = tmp_path / "notes.txt"
    unread.write_text("lunch is at noon\nthe build is green\n", encoding="utf-8")
    run = _cli("--markdown", "-", "--no-semantic", "--logs", str(XID79), "--logs", str(unread))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("# gpuobs diagnose") and "`xid_79_fallen_off_bus`" in run.stdout
    assert "## Notes" in run.stdout and "notes.txt" in run.stdout.split("## Notes", 1)[1]
    assert "╭" not in run.stdout  # not the terminal panel
    both = _cli("--markdown", "-", "--json", "--logs", str(XID79))
    assert both.returncode == 2 and both.stdout == ""
    assert "--markdown - and --json both write to stdout" in both.stderr and "Traceback" not in both.stderr
    assert not (ROOT / "-").exists()


def test_extra_catalog_overrides_a_signature(tmp_path: Path) -> None:
    src = (ROOT / "rca" / "catalog" / "engine_dead.toml").read_text()
    (tmp_path / "engine_dead.toml").write_text(
        src.replace(
            'title = "Serving engine died (EngineDeadError)"', 'title = "Our engine died (site runbook 12)"'
        )
    )
    run = CliRunner().invoke(
        app, ["diagnose", "--json", "--catalog", str(tmp_path), "--logs", str(CASES / "engine_dead")]
    )
    assert run.exit_code == 0
    assert json.loads(run.stdout)["causes"][0]["title"] == "Our engine died (site runbook 12)"


def test_stdin_and_usage_errors_as_a_real_process(tmp_path: Path) -> None:
    pasted = (CASES / "xid_79_paste_no_timestamps" / "issue-comment.txt").read_text()
    run = _cli("--json", "--logs", "-", stdin=pasted)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["top_cause"] == "xid_79_fallen_off_bus"
    missing = _cli("--logs", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    both = _cli("--logs", str(XID79), "--since", "30m", "--start", "2026-11-29T00:00:00Z")
    assert both.returncode == 2 and "either --since or --start/--end" in both.stderr
    bad = _cli("--logs", str(XID79), "--since", "soon")
    assert bad.returncode == 2 and "invalid duration" in bad.stderr


@pytest.mark.parametrize(
    "flags", [["--logs", "-", "--traces", "-"], ["--logs", "-", "-"], ["--exporter", "-", "--logs", "-"]]
)
def test_standard_input_named_twice_is_a_usage_error(flags: list[str]) -> None:
    """The second reader of `-` found standard input closed: a run that went on with "[traces] unexpected
    ValueError: I/O operation on closed file" among its problems."""
    pasted = (CASES / "xid_79_paste_no_timestamps" / "issue-comment.txt").read_text()
    done = _cli(*flags, stdin=pasted)
    assert done.returncode == 2 and "standard input ('-') is read once" in done.stderr, done.stdout
    assert "closed file" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_log_paths_given_without_a_flag_are_read_like_logs(tmp_path: Path) -> None:
    """`gpuobs diagnose dmesg.txt -` is how a pasted file is given: bare paths join the --logs ones."""
    pasted = (CASES / "xid_79_paste_no_timestamps" / "issue-comment.txt").read_text()
    from_stdin = _cli("--json", "-", stdin=pasted)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout)["top_cause"] == "xid_79_fallen_off_bus"
    mixed = _cli("--json", str(XID79 / "dmesg.txt"), "--logs", "-", stdin=pasted)
    assert mixed.returncode == 0, mixed.stderr
    sources = json.loads(mixed.stdout)["sources"]
    assert any(name.endswith("dmesg.txt") for name in sources) and len(sources) == 2, sources
    missing = _cli(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "nope.log" in missing.stderr and "Traceback" not in missing.stderr


def test_binary_input_is_a_clear_error(tmp_path: Path) -> None:
    blob = tmp_path / "core.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    run = _cli("--logs", str(blob))
    assert run.returncode == 2 and "core.bin" in run.stderr and "Traceback" not in run.stderr


_XID79_LINE = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"


def _diagnose_bytes(data: bytes, log: Path | None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a real `gpuobs diagnose --json` reading `data` from the file `log`, or
    piped to `--logs -` when `log` is None."""
    if log is not None:
        log.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", "--json", "--logs", "-" if log is None else str(log)],
        input=data if log is None else None,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize(
    "form", ["utf-16-le", "utf-16-be", "gzip", "long", "stdin"], ids=lambda f: f"{f} with a BOM"
)
def test_utf16_text_is_read_like_utf8(tmp_path: Path, form: str) -> None:
    """What Windows PowerShell's `>` writes (UTF-16 with a byte-order mark) is a log, not a binary file: read
    whole, gzip'd, streamed past the first megabyte (the failure on its last line), or piped."""
    import gzip

    text = "".join(f"step {i} ok é\n" for i in range(60_000 if form == "long" else 3)) + _XID79_LINE
    data = text.encode("utf-16")  # little-endian with its BOM on this machine
    if form == "utf-16-be":
        data = b"\xfe\xff" + text.encode("utf-16-be")
    elif form == "gzip":
        data = gzip.compress(data)
    code, stdout, stderr = _diagnose_bytes(data, None if form == "stdin" else tmp_path / "dmesg.txt")
    assert code == 0, stderr[-2000:]
    assert json.loads(stdout)["top_cause"] == "xid_79_fallen_off_bus"


@pytest.mark.parametrize("form", ["bzip2", "xz", "xz long", "xz stdin"])
def test_bzip2_and_xz_logs_are_read_like_gzip(tmp_path: Path, form: str) -> None:
    """logrotate's bzip2 and xz choices (and sosreport's .xz files) were refused as "binary file, not a log":
    read whole, streamed past the first megabyte (the failure on its last line), or piped."""
    import bz2
    import lzma

    text = "".join(f"step {i} ok\n" for i in range(120_000 if "long" in form else 3)) + _XID79_LINE
    data = bz2.compress(text.encode()) if form == "bzip2" else lzma.compress(text.encode())
    log = tmp_path / ("kern.log.bz2" if form == "bzip2" else "kern.log.xz")
    code, stdout, stderr = _diagnose_bytes(data, None if form.endswith("stdin") else log)
    assert code == 0, stderr[-2000:]
    assert json.loads(stdout)["top_cause"] == "xid_79_fallen_off_bus"


def test_a_zstd_or_cut_compressed_log_is_one_line_saying_what_it_is(tmp_path: Path) -> None:
    import lzma

    zstd = tmp_path / "kern.log.zst"
    zstd.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(range(200)))  # a zstd frame's magic number, then anything
    cut = tmp_path / "kern.log.xz"
    cut.write_bytes(lzma.compress(_XID79_LINE.encode() * 50)[:40])
    for path, message in ((zstd, "zstd-compressed; decompress it first (zstd -d)"), (cut, "corrupt xz data")):
        run = _cli("--logs", str(path))
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert f"{path}: {message}" in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_window_filters_evidence() -> None:
    inside = CliRunner().invoke(
        app,
        [
            "diagnose",
            "--json",
            "--logs",
            str(XID79),
            "--start",
            "2026-11-29T21:00:00Z",
            "--end",
            "2026-11-29T21:10:00Z",
        ],
    )
    assert inside.exit_code == 0
    before = CliRunner().invoke(
        app,
        [
            "diagnose",
            "--json",
            "--logs",
            str(XID79),
            "--start",
            "2026-11-29T20:00:00Z",
            "--end",
            "2026-11-29T20:30:00Z",
        ],
    )
    assert before.exit_code == 1 and json.loads(before.stdout)["causes"] == []


def test_live_mode_with_no_inputs_reads_this_node() -> None:
    run = CliRunner().invoke(app, ["diagnose", "--json"])
    assert run.exit_code in (0, 1)
    data = json.loads(run.stdout)
    # This machine has no GPU: the live NVML reader says so in a note instead of failing.
    assert data["window"]["start"] is not None and data["window"]["end"] - data["window"]["start"] == 1800
    assert any("NVML" in n for n in data["notes"]) or data["evidence_count"] > 0


def test_window_flags_parse_with_gpuobs_timeparse_and_name_the_flag() -> None:
    assert TimeWindow.from_flags(since="1m30s", now=10_000.0) == TimeWindow(9_910.0, 10_000.0)
    assert TimeWindow.from_flags(since="2h", now=10_000.0).start == 2800.0
    window = TimeWindow.from_flags(start="2026-11-29T21:04:52Z", end="2026-11-29T21:04:53+00:00")
    assert window == TimeWindow(1795986292.0, 1795986293.0)
    assert TimeWindow.from_flags(start="now-1h", now=10_000.0).start == 6400.0
    assert TimeWindow.from_flags(start="2026-11-29T21:04:52").start == 1795986292.0  # naive: UTC
    for bad in ("", "-5m", "0s", "1x"):
        with pytest.raises(InputError, match="--since: invalid duration"):
            TimeWindow.from_flags(since=bad or " ")
    with pytest.raises(InputError, match="--start: invalid time 'yesterday'"):
        TimeWindow.from_flags(start="yesterday")
    with pytest.raises(InputError, match="must be before"):
        TimeWindow.from_flags(start="now", end="now-1h")


@pytest.mark.parametrize("flags", [["--since", "99999999d"], ["--start", "now-99999999d"]])
def test_a_window_reaching_past_the_epoch_reads_everything(flags: list[str]) -> None:
    """The report printed the window's start as a date: year -271764 escaped as a ValueError traceback."""
    run = _cli("--json", "--logs", str(XID79), *flags)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["top_cause"] == "xid_79_fallen_off_bus"
    assert data["window"]["start_iso"] == "1970-01-01T00:00:00.000Z", data["window"]


def test_bundle_replays_to_the_same_diagnosis(tmp_path: Path) -> None:
    archive = tmp_path / "incident.tar.gz"
    case = CASES / "oom_killed_container"
    made = CliRunner().invoke(app, ["bundle", "--logs", str(case / "pods.json"), "-o", str(archive)])
    assert made.exit_code == 0, made.stdout
    direct = CliRunner().invoke(app, ["diagnose", "--json", "--logs", str(case / "pods.json")])
    replay = CliRunner().invoke(app, ["diagnose", "--json", "--bundle", str(archive)])
    assert replay.exit_code == direct.exit_code == 0
    ids = [c["id"] for c in json.loads(replay.stdout)["causes"]]
    assert ids == [c["id"] for c in json.loads(direct.stdout)["causes"]] and ids[0] == "oom_killed_container"


def test_list_signatures() -> None:
    run = CliRunner().invoke(app, ["diagnose", "--list-signatures", "--json"])
    assert run.exit_code == 0
    ids = [row["id"] for row in json.loads(run.stdout)["signatures"]]
    assert "xid_79_fallen_off_bus" in ids and ids == sorted(ids) and len(ids) >= 44


def test_one_cause_on_several_gpus_is_reported_once_with_every_entity(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    line = "[Sun Nov 29 21:0{m}:52 2026] NVRM: Xid (PCI:0000:{bus}:00): 79, GPU has fallen off the bus.\n"
    log.write_text(line.format(m=4, bus="3b") + line.format(m=5, bus="5e"))
    run = CliRunner().invoke(app, ["diagnose", "--logs", str(log)], env={"COLUMNS": "160"})
    assert run.exit_code == 0 and "also on: pci=0000:5e:00" in run.stdout
    data = json.loads(CliRunner().invoke(app, ["diagnose", "--json", "--logs", str(log)]).stdout)
    assert [c["id"] for c in data["causes"]] == ["xid_79_fallen_off_bus"]
    assert [e["pci_bus_id"] for e in data["causes"][0]["entities"]] == ["0000:3b:00", "0000:5e:00"]


def test_an_unreachable_only_source_is_an_input_error_but_not_when_others_answer() -> None:
    down = _cli("--prometheus", "http://127.0.0.1:1")
    assert (
        down.returncode == 2 and "no evidence could be read" in down.stderr and "Traceback" not in down.stderr
    )
    mixed = CliRunner().invoke(
        app, ["diagnose", "--json", "--prometheus", "http://127.0.0.1:1", "--logs", str(XID79)]
    )
    assert mixed.exit_code == 0
    data = json.loads(mixed.stdout)
    assert data["top_cause"] == "xid_79_fallen_off_bus" and data["problems"][0].startswith("[prometheus]")


@pytest.mark.parametrize(
    ("verb", "flag", "url", "shown"),
    [
        ("diagnose", "--prometheus", "prom:9090", "'prom:9090'"),
        ("diagnose", "--prometheus", "ftp://admin:hunter2@prom:9090", "'ftp://prom:9090'"),
        ("diagnose", "--prometheus", "http://[::1", "'http://[::1'"),
        ("diagnose", "--exporter", "htps://node-7:9400", "'htps://node-7:9400'"),
        ("bundle", "--prometheus", "admin:hunter2@prom:9090", "'prom:9090'"),
    ],
)
def test_a_url_that_is_not_http_is_a_usage_error_before_anything_is_read(
    tmp_path: Path, verb: str, flag: str, url: str, shown: str
) -> None:
    """A typo'd server URL used to be read after the logs and reported as a source that failed with urllib's
    words ("unknown url type: 'prom:9090/api/v1/query?...'"); now one line at once, no password shown, and no
    bundle written."""
    out = tmp_path / "incident.tar.gz"
    args = ["-o", str(out)] if verb == "bundle" else []
    done = subprocess.run(
        [sys.executable, "-m", "gpuobs", verb, "--logs", str(XID79), flag, url, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, COLUMNS="160", NO_COLOR="1"),
    )
    assert done.returncode == 2, done.stdout
    assert f"{flag} {shown} is not an http(s) URL" in done.stderr and "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr + done.stdout and not out.exists()


_KERNEL_XID79 = (
    "Nov 30 10:00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
    "GPU has fallen off the bus.\n"
)


def test_an_input_nothing_was_read_from_is_named_with_a_hint(tmp_path: Path) -> None:
    """An empty file or text no reader knows (here `kubectl describe`) is named, never a silent "no known
    failure signature": alone it is an input error, beside readable input a note in the report."""
    empty = tmp_path / "empty.log"
    empty.write_text("")
    describe = tmp_path / "describe.txt"
    describe.write_text("Name:         vllm-0\nNamespace:    serving\nStatus:       Running\n")
    for path, words in ((empty, "empty"), (describe, "no line of it was recognised")):
        done = _cli("--logs", str(path))
        assert done.returncode == 2, done.stdout
        assert str(path) in done.stderr and words in done.stderr, done.stderr
        assert "No known failure signature" not in done.stdout and "Traceback" not in done.stderr
    assert "kubectl get pods,events -o json" in _cli("--logs", str(describe)).stderr
    kern = tmp_path / "kern.log"
    kern.write_text(_KERNEL_XID79)
    mixed = _cli("--logs", str(kern), "--logs", str(describe), "--json")
    assert mixed.returncode == 0, mixed.stderr
    notes = json.loads(mixed.stdout)["notes"]
    assert any(str(describe) in n and "not read" in n for n in notes), notes


def test_a_trace_file_with_no_span_is_named_not_weighed_as_empty(tmp_path: Path) -> None:
    """`--traces` given JSON that holds no OTLP span (an array of numbers, spans without a name or start
    time, an empty export) was read as zero spans and reported as "no known failure signature"; now a JSON
    value that is not a request is an input error naming it, and a file with no span is named as not read."""
    numbers = tmp_path / "numbers.json"
    numbers.write_text("[1, 2, 3]")
    scalar = tmp_path / "scalar.jsonl"
    scalar.write_text('{"resourceSpans": []}\n"text"\n')
    for path, words in ((numbers, "item 1 of the JSON array is a number"), (scalar, "line 2 is a string")):
        done = _cli("--traces", str(path))
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    nameless = tmp_path / "nameless.json"
    nameless.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5}]}]}]}))
    alone = _cli("--traces", str(nameless))
    assert alone.returncode == 2, alone.stdout
    assert f"{nameless}: no span in it" in alone.stderr and "No known failure signature" not in alone.stdout
    kern = tmp_path / "kern.log"
    kern.write_text(_KERNEL_XID79)
    mixed = _cli("--logs", str(kern), "--traces", str(nameless), "--json")
    assert mixed.returncode == 0, mixed.stderr
    notes = json.loads(mixed.stdout)["notes"]
    assert any(f"not read: {nameless}: no span in it" in n for n in notes), notes


def test_a_healthy_tool_output_is_read_and_healthy(tmp_path: Path) -> None:
    """`kubectl describe node` listing the node's GPUs (or, under the device plugin's mixed MIG strategy, its
    MIG slices beside `nvidia.com/gpu: 0`) was read: no cause, exit 1, not an unreadable input (exit 2). The
    same node with no GPU and no slice registered names gpu_not_visible."""
    gpu_line = "  nvidia.com/gpu:  {gpus}\n"
    listing = "Capacity:\n  cpu:  64\n" + gpu_line + "{mig}Allocatable:\n" + gpu_line
    for gpus, mig, code in (("8", "", 1), ("0", "  nvidia.com/mig-1g.10gb:  7\n", 1), ("0", "", 0)):
        node = tmp_path / f"node_{gpus}_{bool(mig)}.txt"
        node.write_text(listing.format(gpus=gpus, mig=mig))
        done = _cli("--logs", str(node), "--json", "--no-semantic")
        assert done.returncode == code, (node.read_text(), done.stdout, done.stderr)
        causes = [c["id"] for c in json.loads(done.stdout)["causes"]]
        assert causes == ([] if code else ["gpu_not_visible"]), causes
    # any tool output a reader recognised counts as read: a pod list of running pods is healthy too
    pods = tmp_path / "pods.txt"
    pods.write_text("NAME      READY   STATUS    RESTARTS   AGE\nvllm-0    1/1     Running   0          3d\n")
    listed = _cli("--logs", str(pods), "--no-semantic")
    assert listed.returncode == 1 and "No known failure signature" in listed.stdout, listed.stderr


def test_known_host_and_gpu_fill_the_remediation(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text(_KERNEL_XID79)
    done = _cli("--logs", str(kern), "--json")
    assert done.returncode == 0, done.stderr
    steps = " ".join(json.loads(done.stdout)["causes"][0]["remediation"])
    assert "kubectl cordon gpu-node-7" in steps
    # No GPU index in the line, but nvidia-smi -i takes the PCI bus id the kernel named.
    assert "-i 0000:3b:00" in steps and "<gpu>" not in steps and "<host>" not in steps


def test_long_evidence_lines_are_cut_at_a_word(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    words = " ".join(f"word{i:03d}" for i in range(120))
    kern.write_text(_KERNEL_XID79.rstrip("\n") + " " + words + "\n")
    data = json.loads(_cli("--logs", str(kern), "--json").stdout)
    text = data["causes"][0]["evidence"][0]["text"]
    assert len(text) <= 400 and text.endswith(" …"), text
    assert re.fullmatch(r"word\d{3}", text.removesuffix(" …").split()[-1]), text


def test_a_failed_source_is_reported_once() -> None:
    done = _cli("--prometheus", "http://127.0.0.1:1", "--logs", str(XID79))
    assert done.returncode == 0
    assert (done.stdout + done.stderr).count("http://127.0.0.1:1") == 1, done.stdout + done.stderr


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "terminal"])
def test_stdout_closed_early_exits_141_without_a_traceback(as_json: bool) -> None:
    """`gpuobs diagnose ... | head -1`: the reader is gone before the report is written (closed here
    before the process writes, so no race): exit 141 as documented, nothing on stderr."""
    argv = [sys.executable, "-m", "gpuobs", "diagnose", "--logs", str(XID79)]
    argv += ["--json"] if as_json else []
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "Broken pipe" not in err, err
