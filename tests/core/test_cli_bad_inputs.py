"""Bad inputs that a sweep of every command found answered with a traceback, a hang, a wrong exit code or a
lost file; each is now one line naming what is wrong (exit 2), and nothing the user had is touched.

Every case runs the real `gpuobs` in a subprocess with a timeout (a hang fails the test, it does not stall
it), on real files: a FIFO with no writer, /proc/self/mem (opened, then EIO on the first read), bundles made
by `gpuobs bundle` and then damaged, a --catalog entry with an impossible confidence."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gpuobs.rca.catalog import SignatureError, parse_signature
from gpuobs.rca.parsers.k8s import evidence_from_objects

GPUOBS = str(Path(sys.executable).parent / "gpuobs")
XID_LINE = (
    "2026-12-07T18:00:00Z kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=python, "
    "GPU has fallen off the bus."
)


def gpuobs(
    *args: str, cwd: Path, timeout: float = 120, semantic: str = "off"
) -> subprocess.CompletedProcess[str]:
    """The real CLI; the semantic tier on only where a test is about what it reads."""
    env = {**os.environ, "TERM": "dumb", "GPUOBS_CONFIG": os.devnull, "COLUMNS": "200"}
    env["GPUOBS_SEMANTIC"] = semantic
    return subprocess.run([GPUOBS, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def one_line_error(done: subprocess.CompletedProcess[str], words: str, code: int = 2) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == code, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert words in " ".join(done.stderr.split()), done.stderr[-3000:]


@pytest.fixture
def kern_log(tmp_path: Path) -> Path:
    log = tmp_path / "kern.log"
    log.write_text(XID_LINE + "\n")
    return log


# -- diagnose --------------------------------------------------------------------------------------------


def test_the_report_never_replaces_the_log_it_reads(tmp_path: Path, kern_log: Path) -> None:
    """`diagnose kern.log --markdown kern.log` replaced the incident's only log with the report, exit 0."""
    done = gpuobs("diagnose", "kern.log", "--no-semantic", "--markdown", "kern.log", cwd=tmp_path)
    one_line_error(done, "--markdown kern.log is also an input of this run (kern.log): the report would")
    assert kern_log.read_text() == XID_LINE + "\n"
    link = tmp_path / "report.md"
    link.symlink_to(kern_log)  # the same file by another name
    done = gpuobs("diagnose", "--logs", "kern.log", "--no-semantic", "--markdown", "report.md", cwd=tmp_path)
    one_line_error(done, "is also an input of this run")
    assert kern_log.read_text() == XID_LINE + "\n"


@pytest.mark.parametrize(
    ("given", "words"), [("", "--markdown '.': not a file name"), (".", "not a file name")]
)
def test_a_markdown_path_that_names_no_file_is_a_usage_error(
    tmp_path: Path, kern_log: Path, given: str, words: str
) -> None:
    """`--markdown ''` and `--markdown .` printed the report, then a ValueError traceback from the writer."""
    one_line_error(gpuobs("diagnose", "kern.log", "--no-semantic", "--markdown", given, cwd=tmp_path), words)


def test_a_file_that_fails_its_first_read_is_named(tmp_path: Path) -> None:
    """/proc/self/mem opens, then its first read fails with EIO: a traceback, then "unexpected OSError"."""
    done = gpuobs("diagnose", "/proc/self/mem", "--no-semantic", cwd=tmp_path)
    one_line_error(done, "/proc/self/mem: cannot read (Input/output error)")


def test_a_folder_with_nothing_to_read_is_named(tmp_path: Path, kern_log: Path) -> None:
    """`diagnose emptydir` said "0 records from no source" and exit 1, as over a quiet node."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "screenshot.png").write_bytes(b"\x89PNG")
    one_line_error(gpuobs("diagnose", "empty", cwd=tmp_path), "empty: a folder with no log file in it")
    one_line_error(gpuobs("diagnose", "", cwd=tmp_path), "error: '': no such file or folder")
    done = gpuobs("diagnose", "empty", "kern.log", "--json", cwd=tmp_path)  # beside a log: a note
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not read: empty: a folder with no log file in it" in " ".join(json.loads(done.stdout)["notes"])


@pytest.mark.parametrize(
    ("flag", "url"),
    [
        ("--prometheus", "http://prometheus 9090"),
        ("--exporter", "http://127.0.0.1:1/x y"),
        ("--prometheus", "http://127.0.0.1:99999"),
    ],
)
def test_a_url_http_cannot_send_is_a_usage_error(
    tmp_path: Path, kern_log: Path, flag: str, url: str
) -> None:
    """A space or an out-of-range port failed inside http.client, after the other sources were read."""
    done = gpuobs("diagnose", "kern.log", "--no-semantic", flag, url, cwd=tmp_path)
    one_line_error(done, f"{flag} {url!r} is not an http(s) URL")


def test_kubernetes_objects_of_another_shape_are_skipped_with_a_warning(tmp_path: Path) -> None:
    """A hand-edited `kubectl -o json` dump (`"metadata": 5`) ended the read of all objects in a traceback."""
    scheduling = {
        "kind": "Event",
        "reason": "FailedScheduling",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        "involvedObject": {"kind": "Pod", "name": "llm-0", "namespace": "serving"},
    }
    broken = [
        {"kind": "Pod", "metadata": 5, "status": {}},
        {"kind": "Pod", "metadata": {"name": "p"}, "status": {"containerStatuses": [5]}},
        {"kind": "Pod", "metadata": {"name": "p"}, "status": {"containerStatuses": [{"state": 5}]}},
        {"kind": "Event", "reason": "BackOff", "involvedObject": 5},
    ]
    found = evidence_from_objects([*broken, scheduling], source="k.json")
    assert [e.value for e in found] == ["FailedScheduling"]
    (tmp_path / "k.json").write_text(json.dumps({"kind": "List", "items": [*broken, scheduling]}))
    done = gpuobs("diagnose", "k.json", "--no-semantic", "--json", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert json.loads(done.stdout)["causes"][0]["id"] == "gpu_not_visible"
    assert "k.json: 4 Kubernetes object(s) not of the API's shape were skipped" in done.stderr


def test_a_window_that_holds_no_record_names_no_cause_and_says_why(tmp_path: Path, kern_log: Path) -> None:
    """With `--end 0` (or a window of a second), the semantic tier still read the whole log and named the Xid
    79 it saw, while the report's footer said "0 records from no source"; no word of the window."""
    for window in (["--end", "0"], ["--since", "1s"]):
        done = gpuobs("diagnose", "kern.log", *window, "--json", cwd=tmp_path, semantic="on")
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        report = json.loads(done.stdout)
        assert report["causes"] == []
        assert any("1 record(s) outside the window" in n and "1 from logs" in n for n in report["notes"])
    start = ["--start", "2026-12-07T17:00:00Z"]
    done = gpuobs("diagnose", "kern.log", *start, "--json", cwd=tmp_path, semantic="on")
    assert json.loads(done.stdout)["causes"][0]["id"] == "xid_79_fallen_off_bus"


def _bundle(tmp_path: Path, kern_log: Path, name: str) -> Path:
    out = tmp_path / name
    done = gpuobs("bundle", "--no-live", "--logs", str(kern_log), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def _read(tar: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(info) if info.isfile() else None
    return handle.read() if handle is not None else b""


def _rewrite(bundle: Path, member: str, doc: object) -> None:
    """Replace one JSON member of a bundle, keeping the others."""
    with tarfile.open(bundle) as tar:
        members = [(info, _read(tar, info)) for info in tar]
    with tarfile.open(bundle, "w:gz") as tar:
        for info, data in members:
            if info.name.endswith(f"/{member}"):
                data = json.dumps(doc).encode()
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def test_a_damaged_bundle_is_named_not_a_traceback(tmp_path: Path, kern_log: Path) -> None:
    """A manifest whose `files` is not a list, or evidence.json without its records, gave a TypeError
    traceback or an empty diagnosis ("No known failure signature", exit 1) instead of "damaged"."""
    bundle = _bundle(tmp_path, kern_log, "evidence.tar.gz")
    _rewrite(bundle, "evidence.json", {"records": 5})
    one_line_error(gpuobs("diagnose", "--bundle", str(bundle), cwd=tmp_path), "evidence.json is damaged")
    bundle = _bundle(tmp_path, kern_log, "manifest.tar.gz")
    with tarfile.open(bundle) as tar:
        manifest = json.loads(_read(tar, next(m for m in tar if m.name.endswith("manifest.json"))))
    _rewrite(bundle, "manifest.json", {**manifest, "files": 5})
    done = gpuobs("diagnose", "--bundle", str(bundle), "--json", cwd=tmp_path, semantic="on")  # reads logs
    assert done.returncode == 0 and "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["causes"][0]["id"] == "xid_79_fallen_off_bus"
    assert any("manifest.json is damaged (its files are not a list" in p for p in report["problems"])


@pytest.mark.parametrize("base", [float("nan"), float("inf"), 1e308, -3.0, "high", True])
def test_a_signature_confidence_is_a_number_from_0_to_1(base: object) -> None:
    """`base = nan` (or 1e308) in a --catalog entry made it confidence 0.99, above the real Xid 79 cause."""
    entry = {
        "id": "mine", "title": "t", "severity": "high", "scope": "gpu", "explanation": "e",
        "remediation": ["r"], "base": base, "require": [{"name": "x", "key": "xid", "value": [79]}],
    }
    with pytest.raises(SignatureError, match=r"mine: base must be a number from 0 to 1"):
        parse_signature(entry, "mine")
    with pytest.raises(SignatureError, match="title must be a non-empty string"):
        parse_signature({**entry, "base": 0.5, "title": 5}, "mine")


def test_a_bundle_of_nothing_is_refused(tmp_path: Path) -> None:
    """`bundle --no-live -o x.tar.gz` with no input wrote an empty archive, exit 0: a quiet node on replay."""
    one_line_error(gpuobs("bundle", "--no-live", "-o", "x.tar.gz", cwd=tmp_path), "nothing to bundle")
    assert not (tmp_path / "x.tar.gz").exists()


# -- export, serve, loadtest, gameday, dashboards ------------------------------------------------------------


def test_a_web_config_that_is_a_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO with no writer blocked the exporter's start in open(); SIGINT and SIGTERM were logged and did
    nothing (Python retries an open interrupted by a signal), so it could only be killed."""
    fifo = tmp_path / "web.yml"
    os.mkfifo(fifo)
    done = gpuobs(
        "export", "--backend", "sim", "--port", "0", "--web-config", str(fifo), cwd=tmp_path, timeout=60
    )
    one_line_error(done, f"web config {fifo}: not a regular file")


def test_an_empty_bind_address_is_refused(tmp_path: Path) -> None:
    """`--address ''` listened on every interface (fault injection and all); 127.0.0.1 is the default."""
    done = gpuobs("export", "--backend", "sim", "--port", "0", "--address", "", cwd=tmp_path, timeout=60)
    one_line_error(done, "--address is empty")


def test_a_model_folder_that_is_not_there_is_named_as_such(tmp_path: Path) -> None:
    """`serve --model typo` said "no config.json there", as if the folder existed."""
    done = gpuobs("serve", "--model", "typo", cwd=tmp_path, timeout=60)
    one_line_error(done, "--model typo: no such folder")
    (tmp_path / "weights.bin").write_bytes(b"\0")
    done = gpuobs("serve", "--model", "weights.bin", cwd=tmp_path, timeout=60)
    one_line_error(done, "--model weights.bin: a file, not a folder")


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:port"])
def test_a_loadtest_url_with_a_bad_port_is_a_usage_error(tmp_path: Path, url: str) -> None:
    """Port 99999 reached socket.connect in every request: an exception-group traceback, exit 1 (a missed
    target) instead of 2."""
    done = gpuobs("loadtest", url, cwd=tmp_path, timeout=60)
    one_line_error(done, "the port is not a number from 0 to 65535")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("method: 5\n", "method must be a list of activities, got int"),
        ("method: [5]\n", "method: activity 1 must be an object, got int"),
        ("steady-state-hypothesis: 5\nmethod: []\n", "steady-state-hypothesis must be an object"),
    ],
)
def test_an_experiment_of_another_shape_is_named(tmp_path: Path, body: str, words: str) -> None:
    """chaoslib's validator raised TypeError or AttributeError on these; `gameday --dry-run` exited 1."""
    (tmp_path / "mine.yaml").write_text("title: t\ndescription: d\n" + body)
    one_line_error(gpuobs("gameday", "--dry-run", "mine.yaml", cwd=tmp_path), f"mine.yaml: {words}")


def test_a_dry_run_shows_an_activity_of_any_module(tmp_path: Path) -> None:
    """An action from a module with no dot in its name (`os`) ended the dry run with an IndexError."""
    (tmp_path / "mine.yaml").write_text(
        "title: t\ndescription: d\nmethod:\n- type: action\n  name: where\n"
        "  provider:\n    type: python\n    module: os\n    func: getcwd\n"
    )
    done = gpuobs("gameday", "--dry-run", "--json", "mine.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)[0]["actions"] == ["os.getcwd"]


def test_dashboards_build_into_an_empty_name_is_refused(tmp_path: Path) -> None:
    """`dashboards build ''` wrote nine files into the folder the user stood in (typer reads '' as '.')."""
    one_line_error(gpuobs("dashboards", "build", "", cwd=tmp_path), "OUT_DIR is empty")
    assert list(tmp_path.iterdir()) == []


# -- the sixth sweep's leftovers ---------------------------------------------------------------------------


def test_the_catalog_listing_honours_markdown(tmp_path: Path) -> None:
    """`diagnose --list-signatures --markdown sigs.md` printed the table and wrote nothing."""
    done = gpuobs("diagnose", "--list-signatures", "--markdown", "sigs.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    written = (tmp_path / "sigs.md").read_text().splitlines()
    rows = [line for line in written if line.startswith("| ") and not line.startswith("| id ")]
    listed = json.loads(gpuobs("diagnose", "--list-signatures", "--json", cwd=tmp_path).stdout)["signatures"]
    assert len(rows) == len(listed) > 40
    assert "| xid_79_fallen_off_bus | critical | gpu |" in "\n".join(written)
    to_stdout = gpuobs("diagnose", "--list-signatures", "--markdown", "-", cwd=tmp_path)
    assert to_stdout.returncode == 0 and to_stdout.stdout.splitlines() == written


def test_a_report_in_a_folder_that_takes_no_new_file_names_the_folder(tmp_path: Path, kern_log: Path) -> None:
    """`--markdown /proc/version` said "No such file or directory" of a file that exists: the report is
    staged beside its target, and /proc makes no new file."""
    done = gpuobs("diagnose", "kern.log", "--no-semantic", "--markdown", "/proc/version", cwd=tmp_path)
    one_line_error(done, "--markdown /proc/version: cannot write: no new file can be made in /proc")


def _gpuobs_with(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TERM": "dumb", "COLUMNS": "300", "GPUOBS_CONFIG": os.devnull, **env}
    return subprocess.run([GPUOBS, *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=full)


def test_a_bad_setting_says_where_it_was_set(tmp_path: Path) -> None:
    """`port = "abc"` in the [export] table was reported as `Invalid value for '--port'`, a flag the user
    never typed; the config file or the variable that set it is named now (a flag alone still names the
    flag)."""
    config = tmp_path / "gpuobs.toml"
    config.write_text('[export]\nport = "abc"\n')
    from_file = _gpuobs_with({"GPUOBS_CONFIG": str(config)}, "export", "--backend", "sim", cwd=tmp_path)
    one_line_error(from_file, "'--port'")
    assert f"(set in the [export] table of {config})" in " ".join(from_file.stderr.split())
    from_env = _gpuobs_with({"GPUOBS_EXPORT_PORT": "abc"}, "export", "--backend", "sim", cwd=tmp_path)
    one_line_error(from_env, "(set by the environment variable GPUOBS_EXPORT_PORT)")
    from_flag = _gpuobs_with({}, "export", "--backend", "sim", "--port", "abc", cwd=tmp_path)
    one_line_error(from_flag, "'--port'")
    assert "(set " not in from_flag.stderr
    infinite = tmp_path / "inf.toml"
    infinite.write_text("[export]\notlp-interval = inf\n")
    from_file = _gpuobs_with({"GPUOBS_CONFIG": str(infinite)}, "export", "--backend", "sim", cwd=tmp_path)
    one_line_error(from_file, f"is not a finite number (set in the [export] table of {infinite})")


def test_a_dry_run_checks_the_out_folder_without_making_it(tmp_path: Path) -> None:
    """`gameday --dry-run --out x` validated everything but --out; the real run then refused it."""
    (tmp_path / "report.md").write_text("kept\n")
    for out, words in [
        ("report.md", "--out report.md: a file, not a folder"),
        ("report.md/day1", "report.md is a file, not a folder"),
    ]:
        done = gpuobs("gameday", "--dry-run", "--out", out, cwd=tmp_path, timeout=60)
        one_line_error(done, words)
    assert (tmp_path / "report.md").read_text() == "kept\n"
    done = gpuobs("gameday", "--dry-run", "--out", "new/day1", cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and "would run" in done.stdout, done.stderr[-2000:]
    assert not (tmp_path / "new").exists()


def test_a_game_day_target_with_a_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    """The game day's URL check took port 99999 and `http://[::1` (a ValueError from urllib) as URLs; it now
    uses the same rule as diagnose and the load tester."""
    for url, words in [
        ("http://127.0.0.1:99999", "the port is not a number from 0 to 65535"),
        ("http://[::1", "a broken IPv6 address"),
    ]:
        done = gpuobs("gameday", "--dry-run", "--serving-url", url, cwd=tmp_path, timeout=60)
        one_line_error(done, f"--serving-url: not an http(s) URL ({words})")


@pytest.mark.parametrize("verb", ["gameday", "loadtest"])
def test_a_refused_url_never_shows_its_password(tmp_path: Path, verb: str) -> None:
    """The game day's and the load tester's URL errors repeated the URL whole, a password in it included
    (diagnose and bundle already left out what stands before an `@`)."""
    url = "http://admin:hunter2@127.0.0.1:99999"
    args = ["gameday", "--dry-run", "--serving-url", url] if verb == "gameday" else ["loadtest", url]
    done = gpuobs(*args, cwd=tmp_path, timeout=60)
    one_line_error(done, "'http://127.0.0.1:99999' is not an http(s) URL" if verb == "loadtest" else
                   "not an http(s) URL (the port is not a number from 0 to 65535): 'http://127.0.0.1:99999'")
    assert "hunter2" not in done.stdout + done.stderr and "admin" not in done.stdout + done.stderr
