"""Where a fault's invented kernel lines may go: a file of the game day's own, never a system log.

`gpuobs gameday --kernel-log /var/log/kern.log` appended invented `NVRM: Xid 79` and OOM-killer lines to the
node's real kernel log, where every other reader of it (a log shipper, node-problem-detector, the on-call
engineer of the next real incident) takes them for real; a write that failed still marked the fault, so the
probes after it waited out their timeouts. Real files, a real HTTP server and a real process here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaoslib.exceptions import ActivityFailed
from support.web import page_handler, serving

from gpuobs.chaos.incident import current
from gpuobs.chaos.node import actions as node_actions
from gpuobs.chaos.safety import SafetyError
from gpuobs.chaos.serving import actions as serving_actions

SYSTEM_LOG = "/var/log/gpuobs-test-never-written.log"


@pytest.fixture(autouse=True)
def fresh_incident() -> Iterator[None]:
    current().reset()
    yield
    current().reset()


@pytest.mark.parametrize("configuration", [None, {"gpuobs_dry_run": True}])
def test_a_system_log_is_refused_and_no_fault_is_marked(configuration: dict[str, bool] | None) -> None:
    with pytest.raises(SafetyError, match=r"is under /var/log, a system log: .* gpuobs_allow_system_log"):
        node_actions.append_xid(79, SYSTEM_LOG, detail="fallen off the bus", configuration=configuration)
    assert not Path(SYSTEM_LOG).exists()
    assert current().since_fault() is None and "a system log" in str(current().no_fault_reason())


def test_a_link_into_a_system_log_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "kernel.log"
    link.symlink_to(SYSTEM_LOG)
    with pytest.raises(SafetyError, match="is under /var/log"):
        node_actions.append_kernel_line("NVRM: Xid (PCI:0000:3b:00): 79, fallen off the bus", str(link))
    assert not Path(SYSTEM_LOG).exists()


def test_the_owner_of_a_node_may_allow_a_system_path() -> None:
    line = node_actions.append_kernel_line(
        "NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error",
        os.devnull,
        configuration={"gpuobs_allow_system_log": True},
    )
    assert line.endswith("48, An uncorrectable double bit error")
    assert current().since_fault() is not None


def test_a_failed_write_marks_no_fault(tmp_path: Path) -> None:
    with pytest.raises(ActivityFailed, match=r"cannot append to kernel log .*: Is a directory"):
        node_actions.append_xid(79, str(tmp_path))
    assert current().since_fault() is None and "Is a directory" in str(current().no_fault_reason())


def test_a_written_line_marks_the_fault_it_is(tmp_path: Path) -> None:
    log = tmp_path / "kernel.log"
    node_actions.append_xid(79, str(log))
    assert "NVRM: Xid (PCI:0000:3b:00): 79" in log.read_text()
    assert current().since_fault() is not None and current().no_fault_reason() is None


def test_the_oom_kill_with_a_system_log_is_refused_before_the_kill() -> None:
    """`signal_worker` with `oom_killer_log` killed the worker, then failed to write its lines."""
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        health = json.dumps({"pid": worker.pid, "supervised": True}).encode()
        with (
            serving(page_handler((200, "application/json", health))) as url,
            pytest.raises(SafetyError, match="is under /var/log"),
        ):
            serving_actions.signal_worker("SIGKILL", url, oom_killer_log=SYSTEM_LOG)
        assert worker.poll() is None, "the worker was killed"
        assert current().since_fault() is None and current().pending() == []
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
