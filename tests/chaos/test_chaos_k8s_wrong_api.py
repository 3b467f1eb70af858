"""The Kubernetes actions and probes against an API server that answers wrongly, through the real
`kubernetes` client over real HTTP on loopback. The servers here are MOCK Kubernetes API servers (no real one
can run here): a proxy's login page, an RBAC refusal in Kubernetes' own Status form, a JSON list, no server at
all, and a recorded API that refuses a delete or holds a node someone else cordoned.

Each failure used to reach the game-day report as the client's exception (a 403 with its HTTP response
headers, a pydantic validation error for the login page), the fault was marked before a delete the server then
refused (so the probes after it waited for a fault that never went in), and the rollback uncordoned a node it
had not cordoned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from chaoslib.exceptions import ActivityFailed
from support.kube_api import write_kubeconfig
from support.web import LOGIN_PAGE, page_handler, serving

from gpuobs.chaos.incident import current
from gpuobs.chaos.k8s import actions, probes

GPUOBS = str(Path(sys.executable).parent / "gpuobs")
FORBIDDEN = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'pods is forbidden: User "system:serviceaccount:chaos:runner" cannot list resource "pods" in '
    'API group "" in the namespace "gpuobs"',
    "reason": "Forbidden",
    "details": {"kind": "pods"},
    "code": 403,
}


@pytest.fixture(autouse=True)
def fresh_incident() -> Iterator[None]:
    current().reset()
    yield
    current().reset()


@pytest.fixture
def api_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the client (KUBECONFIG, no in-cluster account) at a server URL."""

    def point(url: str) -> None:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", url)))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    return point


ANSWERS = {
    "login page": ((200, "text/html", LOGIN_PAGE), "not a Kubernetes API object"),
    "rbac refusal": (
        (403, "application/json", json.dumps(FORBIDDEN).encode()),
        'answered 403 Forbidden: pods is forbidden: User "system:serviceaccount:chaos:runner"',
    ),
    "json list": ((200, "application/json", b"[1, 2]"), "not a Kubernetes API object"),
    "html error": (
        (502, "text/html", b"<html><h1>502 Bad Gateway</h1></html>"),
        "answered 502 Bad Gateway: an HTML",
    ),
}

ACTIVITIES = {
    "pods_ready": lambda: probes.pods_ready("gpuobs", "app=gpuobs-serve"),
    "delete by name": lambda: actions.delete_pods("gpuobs", name="serve-a"),
    "delete by label": lambda: actions.delete_pods("gpuobs", label_selector="app=gpuobs-serve"),
    "cordon": lambda: actions.cordon_node("gpu-node-7"),
    "drain": lambda: actions.drain_node("gpu-node-7", label_selector="app=gpuobs-serve"),
}


@pytest.mark.parametrize("activity", sorted(ACTIVITIES))
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_a_wrong_answer_is_one_line_and_no_fault(api_at: Any, answer: str, activity: str) -> None:
    reply, words = ANSWERS[answer]
    with serving(page_handler(reply)) as url:
        api_at(url)
        with pytest.raises(ActivityFailed) as failed:
            ACTIVITIES[activity]()
    message = str(failed.value)
    assert words in message and url in message, message
    assert "\n" not in message and "HTTP response headers" not in message and "pydantic" not in message
    assert current().since_fault() is None  # nothing went in, so nothing waits for it
    if activity != "pods_ready":
        assert current().no_fault_reason() == message


def test_no_server_at_the_address_is_named(api_at: Any) -> None:
    with serving(page_handler()) as url:
        pass  # the port is free again: nothing listens there
    api_at(url)
    with pytest.raises(ActivityFailed, match=r"deleting|reading") as failed:
        actions.delete_pods("gpuobs", name="serve-a")
    assert f"cannot reach the Kubernetes API at {url}" in str(failed.value)
    assert current().no_fault_reason() is not None


def test_an_unreadable_kubeconfig_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text('{"apiVersion": "v1"\n')
    monkeypatch.setenv("KUBECONFIG", str(broken))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ActivityFailed, match=rf"no Kubernetes API configured: .* {broken} cannot be used"):
        probes.pods_ready("gpuobs")


class RecordedApi(BaseHTTPRequestHandler):
    """A MOCK API server holding one pod the runner may read but not delete, and a node already cordoned."""

    requests: ClassVar[list[tuple[str, str]]] = []
    POD: ClassVar[dict[str, Any]] = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "serve-a", "namespace": "gpuobs"},
    }
    NODE: ClassVar[dict[str, Any]] = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "gpu-node-7"},
        "spec": {"unschedulable": True},
    }

    def _send(self, status: int, doc: dict[str, Any]) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path = self.path.split("?")[0]
        self.requests.append((self.command, path))
        if self.command == "GET" and path == "/api/v1/namespaces/gpuobs/pods/serve-a":
            self._send(200, self.POD)
        elif self.command == "GET" and path == "/api/v1/nodes/gpu-node-7":
            self._send(200, self.NODE)
        else:
            refusal = dict(FORBIDDEN, message=f"{self.command} {path} is forbidden for this service account")
            self._send(403, refusal)

    do_GET = do_DELETE = do_PATCH = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        return


def test_a_refused_delete_marks_no_fault(api_at: Any) -> None:
    RecordedApi.requests.clear()
    with serving(RecordedApi) as url:
        api_at(url)
        refused = r"deleting pod gpuobs/serve-a at .*: the API server answered 403"
        with pytest.raises(ActivityFailed, match=refused):
            actions.delete_pods("gpuobs", name="serve-a")
    assert RecordedApi.requests == [
        ("GET", "/api/v1/namespaces/gpuobs/pods/serve-a"),
        ("DELETE", "/api/v1/namespaces/gpuobs/pods/serve-a"),
    ]
    assert current().since_fault() is None and "forbidden" in str(current().no_fault_reason())


def test_a_node_someone_else_cordoned_is_left_to_them(api_at: Any) -> None:
    """The drain's rollback used to uncordon the node, although the operator had cordoned it on purpose."""
    RecordedApi.requests.clear()
    with serving(RecordedApi) as url:
        api_at(url)
        with pytest.raises(ActivityFailed, match="node gpu-node-7 is already cordoned"):
            actions.cordon_node("gpu-node-7")
        actions.uncordon_node("gpu-node-7")  # the experiment's rollback
    assert [method for method, _ in RecordedApi.requests] == ["GET"]  # no PATCH either way
    assert current().pending() == []


def test_the_game_day_report_says_why_the_steady_state_did_not_hold(tmp_path: Path) -> None:
    """`gpuobs gameday k8s-pod-delete` with a kubeconfig pointed at a proxy: the report said only "the steady
    state did not hold before the fault"; the probe's reason is in it now."""
    with serving(page_handler()) as url:
        env = {
            **os.environ,
            "KUBECONFIG": str(write_kubeconfig(tmp_path / "kubeconfig", url)),
            "TERM": "dumb",
            "COLUMNS": "200",
            "GPUOBS_CONFIG": os.devnull,
        }
        env.pop("KUBERNETES_SERVICE_HOST", None)
        done = subprocess.run(
            [GPUOBS, "gameday", "k8s-pod-delete", "--out", str(tmp_path / "out"), "--no-prometheus"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    report = (tmp_path / "out" / "gameday.md").read_text()
    for text in (" ".join((done.stdout + done.stderr).split()), " ".join(report.split())):  # rich wraps lines
        assert "serving-pods-ready: listing pods app=gpuobs-serve in gpuobs at" in text, text[-3000:]
        assert "not a Kubernetes API object" in text
        assert "Traceback" not in text and "pydantic" not in text
