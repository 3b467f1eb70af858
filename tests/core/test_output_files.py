"""Files gpuobs writes for the user on a disk that fills mid-write: all or none, the old file kept, exit 74.

A real limit stands in for a full disk: each `gpuobs` runs as a real subprocess under RLIMIT_FSIZE, so a write
past the limit fails with EFBIG inside the kernel (the interpreter ignores SIGXFSZ), as a write on a full disk
fails with ENOSPC; both are the same "for want of room" class to gpuobs.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuobs.errors import InputError, OutputWriteError
from gpuobs.output_files import write_failure, write_texts

GPUOBS = str(Path(sys.executable).parent / "gpuobs")
XID_LINE = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."


def _file_size_limit(size: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def run_limited(size: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gpuobs ARGS` with no file it writes allowed past `size` bytes."""
    return subprocess.run(
        [GPUOBS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_file_size_limit(size),
        env={**os.environ, "TERM": "dumb", "GPUOBS_CONFIG": os.devnull, "COLUMNS": "200"},
    )


def test_a_report_that_does_not_fit_leaves_the_last_one_whole(tmp_path: Path) -> None:
    """`diagnose --markdown report.md` on a full disk truncated the last incident's report to the first
    kilobyte of the new one and said "[Errno 27] File too large" as a usage error (exit 2)."""
    (tmp_path / "kern.log").write_text(XID_LINE + "\n")
    report = tmp_path / "report.md"
    report.write_text("the report of last night's incident\n")
    done = run_limited(200, "diagnose", "--logs", "kern.log", "--markdown", "report.md", cwd=tmp_path)
    assert done.returncode == 74, done.stderr
    assert done.stderr.strip() == (
        "error: --markdown report.md: cannot write: File too large; nothing there was changed"
    ), done.stderr
    assert report.read_text() == "the report of last night's incident\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kern.log", "report.md"]  # no temporary left


def test_a_report_that_fits_replaces_the_last_one(tmp_path: Path) -> None:
    (tmp_path / "kern.log").write_text(XID_LINE + "\n")
    (tmp_path / "report.md").write_text("old\n")
    done = run_limited(1 << 20, "diagnose", "--logs", "kern.log", "--markdown", "report.md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "xid_79" in (tmp_path / "report.md").read_text()


def test_a_rebuild_on_a_full_disk_leaves_the_last_build_whole(tmp_path: Path) -> None:
    """`dashboards build` stopped at the first file that did not fit: files before it were the new build,
    that file was cut mid-YAML or mid-JSON (Prometheus refuses the rule file on its next reload)."""
    first = run_limited(1 << 24, "dashboards", "build", "out", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    smallest = min(len(data) for data in before.values())
    largest = max(len(data) for data in before.values())
    assert smallest < largest  # a limit between them lets some files fit and stops at a larger one
    done = run_limited(
        (smallest + largest) // 2,
        "dashboards", "build", "out", "--runbook-base-url", "https://runbooks.example/gpu",
        cwd=tmp_path,
    )
    assert done.returncode == 74, done.stderr
    assert "cannot write: File too large; nothing there was changed" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    after = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before


def test_a_bundle_that_does_not_fit_is_exit_74_and_keeps_the_old_archive(tmp_path: Path) -> None:
    (tmp_path / "kern.log").write_text("".join(f"{XID_LINE} n={i}\n" for i in range(20000)))
    (tmp_path / "incident.tar.gz").write_bytes(b"last night's archive")
    done = run_limited(
        4096, "bundle", "--logs", "kern.log", "--no-live", "-o", "incident.tar.gz", "--force", cwd=tmp_path
    )
    assert done.returncode == 74, done.stderr
    assert done.stderr.strip() == (
        "error: -o incident.tar.gz: cannot write: File too large; nothing there was changed"
    ), done.stderr
    assert (tmp_path / "incident.tar.gz").read_bytes() == b"last night's archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["incident.tar.gz", "kern.log"]


def test_write_texts_follows_a_link_and_keeps_it(tmp_path: Path) -> None:
    """A report path that is a link (a shared folder's current.md) gets the file it points at replaced."""
    real = tmp_path / "reports" / "2026-12-07.md"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "current.md"
    link.symlink_to(real)
    write_texts([(link, "new")])
    assert link.is_symlink() and real.read_text() == "new"


def test_write_texts_into_a_missing_folder_is_the_users_error(tmp_path: Path) -> None:
    kept = tmp_path / "kept.txt"
    with pytest.raises(InputError, match=r"nowhere/a\.txt: cannot write: No such file or directory"):
        write_texts([(kept, "written first"), (tmp_path / "nowhere" / "a.txt", "x")])
    assert not kept.exists() and list(tmp_path.iterdir()) == []  # the staged first file is removed too


@pytest.mark.parametrize(("code", "kind"), [(28, OutputWriteError), (5, OutputWriteError), (13, InputError)])
def test_write_failure_tells_a_full_disk_from_the_users_path(code: int, kind: type[Exception]) -> None:
    error = write_failure("-o x.tar.gz", OSError(code, os.strerror(code)))
    assert type(error) is kind and str(error).startswith(f"-o x.tar.gz: cannot write: {os.strerror(code)}")
