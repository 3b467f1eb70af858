"""Container set-up as pasted into a ticket: how the container was started and what its cgroup allows.

Two facts decide whether a GPU failure inside a container is the driver's: a `docker run` (or podman,
nerdctl) command that asks for no GPU at all (no `--gpus`, no NVIDIA runtime, no /dev/nvidia* device, no
NVIDIA_VISIBLE_DEVICES), and a device cgroup (`cat /sys/fs/cgroup/devices/devices.list`) or an strace that
shows the NVIDIA devices are no longer readable and writable (`c 195:* m`, `open("/dev/nvidiactl") = -1
EPERM`): the container lost its devices, the driver is fine.
"""

from __future__ import annotations

import bisect
import itertools
import re
import shlex
from collections.abc import Sequence

from gpuobs.evidence import Evidence, EvidenceKind
from gpuobs.rca import keys

__all__ = ["CONTAINER_SETUP_CUES", "looks_like_container_setup", "parse_container_setup"]

_RUN_RE = re.compile(
    r"(?:^|[\s$#>])(?:sudo\s+)?(?P<tool>docker|podman|nerdctl)\s+(?:container\s+)?run\s+(?P<args>.*)$"
)
_GPU_FLAGS_RE = re.compile(
    r"--gpus\b|--runtime[= ](?:nvidia|nvidia-container-runtime)\b|--device[= ]\S*nvidia|"
    r"NVIDIA_VISIBLE_DEVICES|nvidia\.com/gpu|--device[= ]\S*/dev/dri"
)
# Options of `docker run` that take a value (so the image is the first token that is neither).
_VALUE_OPTS = {
    "-v", "--volume", "-p", "--publish", "-e", "--env", "--name", "-w", "--workdir", "--network",
    "--net", "--shm-size", "--ipc", "-u", "--user", "--entrypoint", "--mount", "--memory", "-m", "--cpus",
    "--env-file",
    "--device", "--runtime", "--gpus", "-h", "--hostname", "--ulimit", "--label", "-l", "--restart",
    "--add-host", "--cap-add", "--security-opt", "--platform", "--pull", "--log-driver", "--log-opt",
}  # fmt: skip
_RULE_RE = re.compile(r"^(?P<type>[abc]) (?P<major>\d+|\*):(?P<minor>\d+|\*) (?P<perm>[rwm]+)$")
_EPERM_RE = re.compile(r"open(?:at)?\((?:AT_FDCWD, )?\"/dev/nvidia[\w-]*\".*= -1 EPERM")
_NVIDIA_MAJOR = "195"


_CANDIDATE_RE = re.compile(
    r"^.*\b(?:docker|podman|nerdctl)\s+(?:container\s+)?run\b.*$|^[abc] (?:\d+|\*):(?:\d+|\*) [rwm]+$|"
    r"^.*/dev/nvidia.*EPERM.*$",
    re.M,
)


# Substrings one of which a container run command, a devices.list dump or an EPERM line holds.
CONTAINER_SETUP_CUES = (" run ", " rwm", " m\n", "EPERM")


def looks_like_container_setup(text: str) -> bool:
    """True when the text may hold a container run command, a devices.list dump or an EPERM on /dev/nvidia."""
    return any(cue in text for cue in CONTAINER_SETUP_CUES)


def _image(args: str) -> str | None:
    try:
        tokens = shlex.split(args, comments=False, posix=True)
    except ValueError:
        tokens = args.split()
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in _VALUE_OPTS
            continue
        return token
    return None


def parse_container_setup(lines: Sequence[str], source: str = "shell") -> tuple[list[Evidence], set[int]]:
    """Containers started without a GPU and lost NVIDIA device access, from the lines."""
    text = "\n".join(line.strip() for line in lines)
    found = list(_CANDIDATE_RE.finditer(text))
    if not found:
        return [], set()
    starts = [0, *itertools.accumulate(len(line.strip()) + 1 for line in lines)]
    out: list[Evidence] = []
    rules: list[tuple[int, re.Match[str]]] = []
    for hit in found:
        i = bisect.bisect_right(starts, hit.start()) - 1
        line = hit.group(0)
        m = _RUN_RE.search(line)
        if m and not line.startswith("#"):
            if "nvidia-docker" not in line and not _GPU_FLAGS_RE.search(m["args"]):
                image = _image(m["args"])
                out.append(
                    _record(keys.CONTAINER_WITHOUT_GPU, image, line, i, source, {"command": line[:400]})
                )
            continue
        r = _RULE_RE.match(line)
        if r:
            rules.append((i, r))
            continue
        if _EPERM_RE.search(line):
            out.append(_record(keys.CONTAINER_DEVICE_ACCESS, "lost", line, i, source, {"rule": "EPERM"}))
    out.extend(_device_rules(rules, source))
    return out, set()


def _device_rules(rules: list[tuple[int, re.Match[str]]], source: str) -> list[Evidence]:
    """A devices.list that does not let the container read and write the NVIDIA devices (major 195)."""
    if len(rules) < 2:
        return []
    granted = [
        r for _, r in rules if r["major"] in (_NVIDIA_MAJOR, "*") and "r" in r["perm"] and "w" in r["perm"]
    ]
    if granted:
        return []
    nvidia = [(i, r) for i, r in rules if r["major"] == _NVIDIA_MAJOR]
    index, rule = nvidia[0] if nvidia else rules[0]
    text = rule.group(0) if nvidia else "no rule grants rw on c 195:* (the NVIDIA devices)"
    return [_record(keys.CONTAINER_DEVICE_ACCESS, "lost", text, index, source, {"rule": rule.group(0)})]


def _record(
    key: str, value: str | None, raw: str, index: int, source: str, attrs: dict[str, object]
) -> Evidence:
    return Evidence(
        kind=EvidenceKind.STATE,
        key=key,
        value=value,
        source=source,
        raw=raw[:400],
        attrs={**attrs, "line": index + 1},
    )
