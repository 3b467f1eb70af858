"""`kubectl describe pod` and `kubectl get pods` text -> the same Evidence as the Kubernetes JSON objects.

People paste what kubectl printed, not `-o json`: container states (`State: Waiting / Reason:
CrashLoopBackOff`, `Last State: Terminated / Reason: OOMKilled / Exit Code: 137`), the Events table
(`Warning  FailedScheduling  2m (x3 over 5m)  default-scheduler  0/3 nodes are available: 3 Insufficient
nvidia.com/gpu.`), the pod list's STATUS column (a row pasted alone too) and `kubectl describe node`'s
Capacity / Allocatable blocks (a node that lists no GPU registered none). Records use the keys of
`parsers.k8s` (`k8s_pod_status`, `k8s_event`) and the driver record of a missing GPU, so every Kubernetes
signature reads them unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca import keys

__all__ = ["KUBECTL_CUES", "looks_like_kubectl", "parse_kubectl_text"]

# A container's name heads its block, two spaces in, under "Containers:" ("  vllm:").
_CONTAINER_RE = re.compile(r"^  (?P<name>[a-z0-9][a-z0-9.-]*):\s*$")
_KV_RE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Z][\w .-]*?):\s*(?P<value>.*?)\s*$")
_EVENT_HEADER_RE = re.compile(r"^\s*Type\s+Reason\s+Age\s+From\s+Message\s*$")
_EVENT_ROW_RE = re.compile(
    r"^\s*(?P<type>Normal|Warning)\s+(?P<reason>[A-Za-z][\w-]*)\s+(?P<age>\S+(?: \(x(?P<n>\d+) over \S+\))?)"
    r"\s+(?P<src>\S+(?:, \S+)?)\s+(?P<msg>\S.*?)\s*$"
)
# An event row pasted without its table header (one line of `describe`, or `kubectl get events`): read
# only when it is a Warning whose age cell looks like kubectl's ("40s", "2m5s", "3d", "<unknown>").
_AGE_RE = re.compile(r"^(?:\d+[smhd](?:\d+[smh])?|<unknown>)(?: \(x\d+ over \S+\))?$")
_INSUFFICIENT_RE = re.compile(r"Insufficient ([\w./-]*\w)")
# `kubectl describe node`: the GPU resource under Capacity / Allocatable; 0 (or absent) means the device
# plugin registered no GPU on the node, unless it registered MIG slices instead: under the device plugin's
# `mixed` MIG strategy a GPU split into MIG instances is offered as `nvidia.com/mig-<profile>`, and a node
# whose GPUs are all split shows `nvidia.com/gpu: 0` by design.
_NODE_GPU_RE = re.compile(r"^\s+nvidia\.com/gpu:\s*(?P<n>\d+)\s*$")
_NODE_MIG_RE = re.compile(r"^\s+nvidia\.com/mig-[\w.-]+:\s*(?P<n>\d+)\s*$")
# Any resource line of a node's Capacity / Allocatable block ("  cpu:  12", "  hugepages-2Mi:  0",
# "  amd.com/gpu:  8"). A block that lists cpu, memory and pods but no extended resource with "gpu" or "mig"
# in its name is a node on which no device plugin registered a GPU: the same finding as `nvidia.com/gpu: 0`.
_NODE_RESOURCE_RE = re.compile(r"^\s+(?P<name>[a-z][\w.-]*(?:/[\w.-]+)?):\s*\d+\w*\s*$")
_BASE_RESOURCES = frozenset({"cpu", "memory", "pods"})
_GET_HEADER_RE = re.compile(r"^\s*(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE")
_GET_ROW_RE = re.compile(
    r"^\s*(?:(?P<ns>[a-z0-9][\w.-]*)\s+)?(?P<pod>[a-z0-9][\w.-]*)\s+(?P<ready>\d+/\d+)\s+(?P<status>\S+)\s+"
    r"(?P<restarts>\d+)"
)
# A pod row pasted without the table's header ("riva-api-7d9f-74k4m  0/2  OutOfnvidia.com/gpu  0  5m55s"):
# read only when every cell is kubectl's own, down to the AGE cell, and its STATUS is a finding. `-o wide`
# adds the pod's IP (or <none>), its node and two more cells that are <none> or a name.
_LONE_GET_ROW_RE = re.compile(
    _GET_ROW_RE.pattern + r"(?: \([^)]*\))?\s+(?:\d+[smhd](?:\d+[smh])?|<unknown>)"
    r"(?:\s+(?:\d{1,3}(?:\.\d{1,3}){3}|<none>)\s+\S+(?:\s+\S+){0,2})?\s*$"
)
# kube-prometheus / kubernetes-mixin's KubePodCrashLooping alert, as Alertmanager delivers it (mail, chat,
# a pasted notification): 'Pod {{ $labels.namespace }}/{{ $labels.pod }} ({{ $labels.container }}) is in
# waiting state (reason: "CrashLoopBackOff").' It is the pod list's STATUS cell told by kube-state-metrics.
_ALERT_CUE = "is in waiting state (reason:"
_ALERT_RE = re.compile(
    r"\bPod (?P<ns>[a-z0-9][\w.-]*)/(?P<pod>[a-z0-9][\w.-]*) \((?P<container>[a-z0-9][\w.-]*)\) "
    r"is in waiting state \(reason: \\?[\"']?(?P<reason>[A-Za-z]+)"
)
_STATE_KEYS = {"State": "state", "Last State": "last_terminated"}
# STATUS values of `kubectl get pods` that are findings (Running, Completed, Pending... are not).
_BAD_STATUS = {
    "OOMKilled",
    "CrashLoopBackOff",
    "Error",
    "ContainerStatusUnknown",
    "Evicted",
    "UnexpectedAdmissionError",
    "OutOfnvidia.com/gpu",
    "CreateContainerError",
    "RunContainerError",
    "StartError",
}


# STATUS values a pod row pasted alone is read for; the text is kubectl's if it holds one (`_LONE_GET_ROW_RE`
# then asks for every cell).
_LONE_ROW_CUES = ("CrashLoopBackOff", "OutOfnvidia.com/gpu", "OOMKilled")
# Substrings one of which kubectl describe or get-pods output holds (`looks_like_kubectl` asks more).
KUBECTL_CUES = (
    "State:",
    "Events:",
    "READY",
    "Allocatable:",
    "Capacity:",
    "Warning  ",
    "Warning FailedScheduling",
    _ALERT_CUE,
    *_LONE_ROW_CUES,
)


def looks_like_kubectl(text: str) -> bool:
    """True when the text holds kubectl describe or get-pods output (cheap substring checks)."""
    return (
        "Last State:" in text
        or ("State:" in text and "Reason:" in text)
        or ("Events:" in text and "Message" in text)
        or ("READY" in text and "STATUS" in text and "RESTARTS" in text)
        or ("Allocatable:" in text and "nvidia.com/gpu" in text)
        or (("Capacity:" in text or "Allocatable:" in text) and "pods:" in text)
        or "Warning  " in text
        or "Warning FailedScheduling" in text
        or _ALERT_CUE in text
        or any(status in text for status in _LONE_ROW_CUES)
    )


def parse_kubectl_text(lines: Sequence[str], source: str = "kubectl") -> tuple[list[Evidence], set[int]]:
    """Records from describe/get output in the lines, and the indices of the lines read as such."""
    out: list[Evidence] = []
    used: set[int] = set()
    pod = namespace = node = container = None
    state: tuple[str, str, int] | None = None  # (which, state word, indent) of the open State block
    fields: dict[str, str] = {}
    in_events = in_get = mig_slices = False
    zero_gpus: tuple[str, int, str | None] | None = None  # the first `nvidia.com/gpu: 0` line, index, node
    resources: set[str] = set()  # the resource names of the node's Capacity / Allocatable blocks
    last_resource: tuple[str, int, str | None] | None = None  # the blocks' last resource line, index, node
    section = ""

    def close_state() -> None:
        nonlocal state
        if state is not None:
            _state_record(
                out,
                state,
                fields,
                source,
                Entity(host=node, pod=pod, namespace=namespace, container=container),
            )
        state = None
        fields.clear()

    def close_node() -> None:
        """The node described so far registered no GPU, unless it registered MIG slices instead."""
        nonlocal zero_gpus, mig_slices, last_resource
        if zero_gpus is not None and not mig_slices:
            line, index, host = zero_gpus
            _no_gpu_record(out, line, index, source, host, f"node resource {line.strip()}: no GPU registered")
        elif last_resource is not None and _no_gpu_listed(resources):
            line, index, host = last_resource
            _no_gpu_record(out, line, index, source, host, "node resources list no GPU")
        zero_gpus, mig_slices, last_resource = None, False, None
        resources.clear()

    for i, raw in enumerate(lines):
        line = raw.rstrip()
        if not line.strip():
            in_get = False
            continue
        if _EVENT_HEADER_RE.match(line):
            close_state()
            in_events, in_get = True, False
            used.add(i)
            continue
        if _GET_HEADER_RE.match(line):
            close_state()
            in_get, in_events = True, False
            used.add(i)
            continue
        if in_events:
            if set(line.strip()) <= {"-", " "}:
                used.add(i)
                continue
            m = _EVENT_ROW_RE.match(line)
            if m:
                used.add(i)
                _event_record(out, m, i, source, Entity(host=node, pod=pod, namespace=namespace))
                continue
            if line.startswith((" ", "\t")):
                continue  # a wrapped message cell
            in_events = False
        if not in_events and line.lstrip().startswith("Warning"):
            m = _EVENT_ROW_RE.match(line)
            if m and _AGE_RE.match(m["age"]):  # the line stays readable by the text tier (not `used`)
                _event_record(out, m, i, source, Entity(host=node, pod=pod, namespace=namespace))
                continue
        if _ALERT_CUE in line and (a := _ALERT_RE.search(line)) is not None:
            if a["reason"] in _BAD_STATUS:  # the line stays readable by the text tier (not `used`)
                _alert_record(out, a, i, source)
            continue
        if not in_get and (lone := _LONE_GET_ROW_RE.match(line)) is not None:
            if _bad_status(lone["status"]):  # the line stays readable by the text tier (not `used`)
                _get_record(out, lone, i, source)
            continue
        if in_get:
            g = _GET_ROW_RE.match(line)
            if g:
                used.add(i)
                if _bad_status(g["status"]):
                    _get_record(out, g, i, source)
                continue
            in_get = False
        gpus = _NODE_GPU_RE.match(line)
        if gpus and section in ("Capacity", "Allocatable"):
            used.add(i)
            resources.add("nvidia.com/gpu")
            if gpus["n"] == "0" and zero_gpus is None:
                zero_gpus = (line, i, pod)
            continue
        mig = _NODE_MIG_RE.match(line)
        if mig and section in ("Capacity", "Allocatable"):
            used.add(i)
            resources.add("nvidia.com/mig")
            mig_slices = mig_slices or mig["n"] != "0"
            continue
        listed = _NODE_RESOURCE_RE.match(line) if section in ("Capacity", "Allocatable") else None
        if listed:
            resources.add(listed["name"])
            last_resource = (line, i, pod)
            continue
        named = _CONTAINER_RE.match(line)
        if named:
            close_state()
            container = named["name"]
            continue
        kv = _KV_RE.match(line)
        if kv is None:
            continue
        key, value, indent = kv["key"].strip(), kv["value"], len(kv["indent"])
        if indent == 0:
            section = key
        if (
            state is not None
            and indent <= state[2]
            and key not in ("Reason", "Exit Code", "Message", "Signal")
        ):
            close_state()
        if key == "Name" and indent == 0:
            close_node()  # another object described: each node's resources are its own
            pod = value or pod
        elif key == "Namespace" and indent == 0:
            namespace = value or namespace
        elif key == "Node" and indent == 0 and value and value != "<none>":
            node = value.split("/", 1)[0]
        elif key in _STATE_KEYS and value:
            close_state()
            state = (_STATE_KEYS[key], value.split()[0], indent)
            fields["line"] = str(i)
            used.add(i)
        elif state is not None and indent > state[2]:
            fields[key] = value
            used.add(i)
    close_state()
    close_node()
    return out, used


def _state_record(
    out: list[Evidence], state: tuple[str, str, int], fields: dict[str, str], source: str, entity: Entity
) -> None:
    which, word, _ = state
    reason = fields.get("Reason")
    exit_code = fields.get("Exit Code")
    if which == "state" and word == "Running":
        return
    if not reason:
        if word == "Terminated" and exit_code and exit_code != "0":
            reason = f"ExitCode{exit_code}"
        else:
            return
    if reason == "Completed" and exit_code in (None, "0"):
        return
    attrs: dict[str, object] = {
        "state": "waiting"
        if word == "Waiting"
        else ("terminated" if which == "state" else "last_terminated"),
        "line": int(fields.get("line", "0")) + 1,
    }
    if exit_code and exit_code.lstrip("-").isdecimal():
        attrs["exit_code"] = int(exit_code)
    if fields.get("Message"):
        attrs["message"] = fields["Message"]
    text = f"{which.replace('_', ' ')}: {word} reason {reason}" + (
        f" exit code {exit_code}" if exit_code else ""
    )
    out.append(
        Evidence(
            kind=EvidenceKind.EVENT,
            key=keys.K8S_POD_STATUS,
            value=reason,
            source=source,
            entity=entity,
            raw=text,
            attrs=attrs,
        )
    )


def _no_gpu_listed(resources: set[str]) -> bool:
    """True when a node's resource blocks are whole (cpu, memory, pods) and name no GPU or MIG resource."""
    return resources >= _BASE_RESOURCES and not any("gpu" in r or "mig" in r for r in resources)


def _no_gpu_record(
    out: list[Evidence], line: str, index: int, source: str, node: str | None, message: str
) -> None:
    out.append(
        Evidence(
            kind=EvidenceKind.LOG,
            key=keys.DRIVER_ERROR,
            value="no_cuda_gpus",
            source=source,
            entity=Entity(host=node) if node else Entity(),
            raw=line.strip(),
            attrs={"message": message, "line": index + 1},
        )
    )


def _event_record(out: list[Evidence], m: re.Match[str], index: int, source: str, entity: Entity) -> None:
    message = m["msg"]
    attrs: dict[str, object] = {
        "message": message,
        "type": m["type"],
        "count": int(m["n"]) if m["n"] else 1,
        "line": index + 1,
    }
    insufficient = _INSUFFICIENT_RE.findall(message)
    if insufficient:
        attrs["insufficient"] = sorted(set(insufficient))
    out.append(
        Evidence(
            kind=EvidenceKind.EVENT,
            key=keys.K8S_EVENT,
            value=m["reason"],
            source=source,
            entity=entity,
            raw=f"{m['type']} {m['reason']}: {message}"[:2000],
            attrs=attrs,
        )
    )


def _alert_record(out: list[Evidence], a: re.Match[str], index: int, source: str) -> None:
    out.append(
        Evidence(
            kind=EvidenceKind.EVENT,
            key=keys.K8S_POD_STATUS,
            value=a["reason"],
            source=source,
            entity=Entity(pod=a["pod"], namespace=a["ns"], container=a["container"]),
            raw=a.group(0),
            attrs={"state": "waiting", "line": index + 1},
        )
    )


def _reason(status: str) -> str:
    """A STATUS cell's reason: an init container's is told "Init:<reason>" ("Init:0/1" is progress,
    "Init:CrashLoopBackOff" the reason CrashLoopBackOff)."""
    return status.removeprefix("Init:")


def _bad_status(status: str) -> bool:
    """Whether a STATUS cell is a finding."""
    return _reason(status) in _BAD_STATUS


def _get_record(out: list[Evidence], g: re.Match[str], index: int, source: str) -> None:
    status = g["status"]  # the raw line keeps an init container's "Init:" prefix; the value is the reason
    out.append(
        Evidence(
            kind=EvidenceKind.EVENT,
            key=keys.K8S_POD_STATUS,
            value=_reason(status),
            source=source,
            entity=Entity(pod=g["pod"], namespace=g["ns"]),
            raw=f"{g['pod']} {g['ready']} {status} restarts {g['restarts']}",
            attrs={"state": "status", "restarts": int(g["restarts"]), "line": index + 1},
        )
    )
