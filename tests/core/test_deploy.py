"""deploy/: every kustomization renders offline into objects the Kubernetes 1.32 schemas accept, and the
manifests agree with the code they run (CLI flags, probe paths, ports, the pod-resources socket, RSS).

kubectl comes with this machine image but no registry the project installs from has it, so the checks
render with `render()` below: the small subset of kustomize the manifests use (`resources`, `namespace`,
`patches` with an explicit target, strategic merge for built-in kinds, plain merge for custom resources),
refusing anything else so that a manifest outgrowing it fails instead of being half-rendered. One test
compares its output with `kubectl kustomize` object by object; `test_renderer_*` pin its merge semantics.
The prometheus-operator ServiceMonitor has no schema in kubernetes-validate; it is checked against the
subset of its CRD that the manifests use.
"""

from __future__ import annotations

import base64
import copy
import datetime
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import jsonschema
import kubernetes_validate
import pytest
import yaml
from support.prometheus import free_port

import gpuobs
from gpuobs.exporters.sidecar import podresources
from gpuobs.exporters.sidecar.service import DEFAULT_POD_RESOURCES_SOCKET
from gpuobs.names import kernel as kernel_names

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.32.0"
GPUOBS = str(Path(sys.executable).parent / "gpuobs")
IMAGE = f"ghcr.io/gpuobs/gpuobs:{gpuobs.__version__}"
SERVING_IMAGE = f"{IMAGE}-serving"
EXPECTED_KUSTOMIZATIONS = {
    "exporter",
    "exporter/overlays/runtimeclass-nvidia",
    "exporter/overlays/tls-basic-auth",
    "serving",
    "sidecar",
}

# --- the kustomize subset -------------------------------------------------------------------------------

_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "namespace", "resources", "patches"}
_CLUSTER_SCOPED = {
    "Namespace",
    "RuntimeClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "CustomResourceDefinition",
    "StorageClass",
    "PersistentVolume",
}
_BUILTIN_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "node.k8s.io",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
}
# patchMergeKey of the Kubernetes API types the manifests patch; lists without one are replaced whole.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
}


def _group(obj: dict[str, Any]) -> str:
    api = str(obj["apiVersion"])
    return api.split("/")[0] if "/" in api else ""


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":  # ContainerPort merges by containerPort, ServicePort by port
        return "containerPort" if any("containerPort" in i for i in items) else "port"
    return _MERGE_KEYS.get(field)


def _merge(base: Any, patch: Any, field: str, strategic: bool) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            assert not str(key).startswith("$"), f"patch directive {key}: not in the test renderer"
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _merge(out[key], value, key, strategic)
            else:
                out[key] = copy.deepcopy(value)
        return out
    if strategic and isinstance(base, list) and isinstance(patch, list):
        key = _merge_key(field, base + patch)
        if key is not None and all(isinstance(i, dict) and key in i for i in base + patch):
            # kustomize (kyaml) puts the patch's new items first, then the base's, merged in place.
            merged = [copy.deepcopy(i) for i in base]
            new = []
            for item in patch:
                at = next((n for n, old in enumerate(merged) if old[key] == item[key]), None)
                if at is None:
                    new.append(copy.deepcopy(item))
                else:
                    merged[at] = _merge(merged[at], item, field, strategic)
            return new + merged
    return copy.deepcopy(patch)


def apply_patch(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """kustomize's patch of one object: strategic merge for built-in kinds, JSON merge for the rest."""
    body = copy.deepcopy(patch)
    for key in ("apiVersion", "kind"):
        body.pop(key, None)
    meta = body.get("metadata") or {}
    meta.pop("name", None)
    meta.pop("namespace", None)
    return _merge(obj, body, "", strategic=_group(obj) in _BUILTIN_GROUPS)


def render(directory: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize DIRECTORY` prints, for the subset of kustomize described above."""
    kfile = directory / "kustomization.yaml"
    spec = yaml.safe_load(kfile.read_text(encoding="utf-8"))
    unknown = set(spec) - _KUSTOMIZATION_KEYS
    assert not unknown, f"{kfile}: {sorted(unknown)} not implemented by this renderer"
    objs: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            objs.extend(render(path))
        else:
            objs.extend(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None)
    for patch in spec.get("patches", []):
        assert set(patch) == {"path", "target"}, f"{kfile}: patches need exactly path and target"
        target = patch["target"]
        assert set(target) <= {"kind", "name", "group", "version"}, f"{kfile}: target {target}"
        body = yaml.safe_load((directory / patch["path"]).read_text(encoding="utf-8"))
        hits = 0
        for n, obj in enumerate(objs):
            if (
                obj["kind"] == target.get("kind", obj["kind"])
                and obj["metadata"]["name"] == target.get("name", obj["metadata"]["name"])
                and _group(obj) == target.get("group", _group(obj))
            ):
                objs[n] = apply_patch(obj, body)
                hits += 1
        assert hits, f"{kfile}: patch {patch['path']} matches no object"
    if "namespace" in spec:
        for obj in objs:
            if obj["kind"] not in _CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = spec["namespace"]
    ids = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert len(ids) == len(set(ids)), f"{kfile}: duplicate objects {ids}"
    return objs


def kustomization_dirs() -> list[Path]:
    return sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    hits = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, f"expected one {kind}/{name}, got {len(hits)}"
    return hits[0]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"])


def container(obj: dict[str, Any], name: str) -> dict[str, Any]:
    hits = [c for c in pod_spec(obj)["containers"] if c["name"] == name]
    assert len(hits) == 1, f"expected one container {name} in {obj['metadata']['name']}"
    return dict(hits[0])


# --- the ServiceMonitor fields the manifests use (prometheus-operator CRD monitoring.coreos.com/v1) --------

_SECRET_KEY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "key"],
    "properties": {"name": {"type": "string"}, "key": {"type": "string"}, "optional": {"type": "boolean"}},
}
_DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?"
    r"(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
def _prometheus_operator_schema(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of one prometheus-operator object (a CRD kubernetes-validate does not know)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": kind},
            "metadata": {"type": "object"},
            "spec": spec,
        },
    }


SERVICE_MONITOR_SCHEMA = _prometheus_operator_schema("ServiceMonitor", {
        "type": "object",
        "additionalProperties": False,
        "required": ["selector", "endpoints"],
        "properties": {
            "selector": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"matchLabels": {"type": "object"}},
            },
            "namespaceSelector": {"type": "object"},
            "jobLabel": {"type": "string"},
            "endpoints": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "port": {"type": "string"},
                        "path": {"type": "string"},
                        "scheme": {"enum": ["http", "https"]},
                        "interval": _DURATION,
                        "scrapeTimeout": _DURATION,
                        "honorLabels": {"type": "boolean"},
                        "tlsConfig": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "serverName": {"type": "string"},
                                "insecureSkipVerify": {"type": "boolean"},
                                "ca": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {"secret": _SECRET_KEY, "configMap": _SECRET_KEY},
                                },
                            },
                        },
                        "basicAuth": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["username", "password"],
                            "properties": {"username": _SECRET_KEY, "password": _SECRET_KEY},
                        },
                        "relabelings": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "sourceLabels": {"type": "array", "items": {"type": "string"}},
                                    "targetLabel": {"type": "string"},
                                    "regex": {"type": "string"},
                                    "replacement": {"type": "string"},
                                    "separator": {"type": "string"},
                                    "action": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
        },
})


# --- the PrometheusRule fields (prometheus-operator CRD monitoring.coreos.com/v1), written by
# `gpuobs dashboards build`; tests/dashboards also runs promtool over its groups.
_RULE_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["expr"],
    "oneOf": [{"required": ["record"]}, {"required": ["alert"]}],
    "properties": {
        "record": {"type": "string"},
        "alert": {"type": "string"},
        "expr": {"type": ["string", "integer"]},
        "for": _DURATION,
        "keep_firing_for": _DURATION,
        "labels": _RULE_MAP,
        "annotations": _RULE_MAP,
    },
}
_RULE_GROUP = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "rules"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "interval": _DURATION,
        "rules": {"type": "array", "items": _RULE},
    },
}
PROMETHEUS_RULE_SCHEMA = _prometheus_operator_schema("PrometheusRule", {
    "type": "object",
    "additionalProperties": False,
    "required": ["groups"],
    "properties": {"groups": {"type": "array", "items": _RULE_GROUP}},
})


def validate(obj: dict[str, Any]) -> None:
    if obj["kind"] == "ServiceMonitor":
        jsonschema.validate(obj, SERVICE_MONITOR_SCHEMA)
    elif obj["kind"] == "PrometheusRule":
        jsonschema.validate(obj, PROMETHEUS_RULE_SCHEMA)
    else:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# --- running the containers' commands here ---------------------------------------------------------------


def command_line(c: dict[str, Any], substitutions: dict[str, str]) -> list[str]:
    """The container's command + args with `gpuobs` from this venv; every substitution must apply once."""
    argv = [*c["command"], *c.get("args", [])]
    assert argv[0] == "gpuobs", f"container {c['name']} does not run gpuobs: {argv}"
    for old, new in substitutions.items():
        assert argv.count(old) == 1, f"{old!r} not (once) in {argv}"
        argv[argv.index(old)] = new
    return [GPUOBS, *argv[1:]]


def container_env(c: dict[str, Any], home: Path) -> dict[str, str]:
    """The container's environment; downward-API values become plausible stand-ins."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUOBS_")}
    env["HOME"] = str(home)  # no ~/.config/gpuobs/config.toml of this machine
    stand_in = {
        "metadata.name": "gpuobs-exporter-x7k2p",
        "metadata.namespace": "gpuobs",
        "spec.nodeName": "gpu-node-1",
    }
    for item in c.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        else:
            env[item["name"]] = stand_in[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def http_get(
    url: str, context: ssl.SSLContext | None = None, auth: tuple[str, str] | None = None, timeout: float = 5.0
) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()


def wait_until_up(
    url: str, proc: subprocess.Popen[bytes], context: ssl.SSLContext | None = None, deadline_s: float = 20.0
) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        assert proc.poll() is None, f"exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
        try:
            http_get(url, context, timeout=1.0)
            return
        except (OSError, ssl.SSLError):
            time.sleep(0.1)
    pytest.fail(f"{url} did not answer within {deadline_s} s")


@pytest.fixture
def spawn() -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


_QUANTITY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}


def quantity_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]i?|k)?", str(text))
    assert match, f"memory quantity {text!r}"
    return int(match.group(1)) * _QUANTITY.get(match.group(2) or "", 1)


def help_text(verb: str) -> str:
    return subprocess.run(
        [GPUOBS, verb, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "250", "TERM": "dumb"},
        check=True,
    ).stdout


def help_flags(verb: str) -> set[str]:
    out = help_text(verb)
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))
    assert "--help" in flags and not any(f.endswith("-") for f in flags), out
    return flags


def flag_names(args: list[str]) -> list[str]:
    return [a.split("=", 1)[0] for a in args if a.startswith("--")]


# --- the renderer itself ----------------------------------------------------------------------------------


def test_renderer_merges_like_kustomize() -> None:
    """Strategic merge: containers by name, env by name, volumeMounts by mountPath, container ports by
    containerPort, Service ports by port, new items first; args/tolerations replaced; null deletes; custom
    resources: lists replaced."""
    base: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"a": "1"}},
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "x", "operator": "Exists"}],
                    "containers": [
                        {
                            "name": "app",
                            "args": ["--a"],
                            "env": [{"name": "E", "value": "1"}],
                            "ports": [{"containerPort": 80}],
                            "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                        }
                    ],
                }
            }
        },
    }
    patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ignored", "labels": {"b": "2"}},
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "y", "operator": "Exists"}],
                    "containers": [
                        {
                            "name": "app",
                            "args": ["--b"],
                            "env": [{"name": "F", "value": "2"}, {"name": "E", "value": "3"}],
                            "ports": [{"containerPort": 81}],
                            "volumeMounts": [{"name": "w", "mountPath": "/v", "readOnly": True}],
                        },
                        {"name": "side", "image": "i"},
                    ],
                }
            }
        },
    }
    out = apply_patch(base, patch)
    spec = out["spec"]["template"]["spec"]
    assert out["metadata"] == {"name": "d", "labels": {"a": "1", "b": "2"}}
    assert spec["tolerations"] == [{"key": "y", "operator": "Exists"}]
    assert [c["name"] for c in spec["containers"]] == ["side", "app"]
    app = spec["containers"][1]
    assert app["args"] == ["--b"]
    assert app["env"] == [{"name": "F", "value": "2"}, {"name": "E", "value": "3"}]
    assert app["ports"] == [{"containerPort": 81}, {"containerPort": 80}]
    assert app["volumeMounts"] == [{"name": "w", "mountPath": "/v", "readOnly": True}]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"name": "a", "port": 1}], "clusterIP": "None"},
    }
    out = apply_patch(svc, {"spec": {"ports": [{"name": "b", "port": 2}], "clusterIP": None}})
    assert out["spec"] == {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}
    crd = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "m"},
        "spec": {"endpoints": [{"port": "a", "path": "/x"}], "selector": {}},
    }
    out = apply_patch(crd, {"spec": {"endpoints": [{"port": "a", "scheme": "https"}]}})
    assert out["spec"]["endpoints"] == [{"port": "a", "scheme": "https"}]
    assert base["spec"]["template"]["spec"]["containers"][0]["args"] == ["--a"], "the base must not change"


def test_renderer_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nconfigMapGenerator: []\n")
    with pytest.raises(AssertionError, match="configMapGenerator"):
        render(tmp_path)


# --- every kustomization ----------------------------------------------------------------------------------


def test_every_kustomization_is_known_and_documented() -> None:
    found = {str(p.relative_to(DEPLOY)) for p in kustomization_dirs() if p.name != "base"}
    assert found >= EXPECTED_KUSTOMIZATIONS, f"missing: {EXPECTED_KUSTOMIZATIONS - found}"
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    applied = set(re.findall(r"kubectl apply -k deploy/([\w./-]+)", readme))
    assert applied >= found, f"deploy/README.md does not say how to apply {sorted(found - applied)}"
    for path in applied:
        assert (DEPLOY / path / "kustomization.yaml").is_file(), f"README: no kustomization in deploy/{path}"


def test_renderer_agrees_with_kubectl_kustomize() -> None:
    """The renderer's output equals kustomize's own for every kustomization (kubectl is part of this
    machine image; `kubectl kustomize` needs no cluster). This is also what refuses layouts kustomize
    refuses, such as an overlay inside its base's folder."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl not found: this test checks its renderer against `kubectl kustomize`")
    for directory in kustomization_dirs():
        out = subprocess.run(
            [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
        )
        assert out.returncode == 0, f"kubectl kustomize {directory}: {out.stderr.strip()}"
        real = {_key(o): o for o in yaml.safe_load_all(out.stdout) if o}
        mine = {_key(o): o for o in render(directory)}
        assert mine.keys() == real.keys(), directory
        for key, obj in mine.items():
            assert obj == real[key], f"{directory}: {key} differs from kubectl kustomize"


@pytest.mark.parametrize("name", sorted(str(p.relative_to(DEPLOY)) for p in kustomization_dirs()))
def test_kustomization_renders_and_validates(name: str) -> None:
    objs = render(DEPLOY / name)
    assert objs
    for obj in objs:
        validate(obj)
    for obj in objs:
        if obj["kind"] not in ("DaemonSet", "Deployment"):
            continue
        spec = pod_spec(obj)
        assert spec["enableServiceLinks"] is False, "service links put GPUOBS_* variables into the env"
        assert spec["automountServiceAccountToken"] is False
        labels = obj["spec"]["template"]["metadata"]["labels"]
        assert obj["spec"]["selector"]["matchLabels"].items() <= labels.items()
        names = [v["name"] for v in spec.get("volumes", [])]
        assert len(names) == len(set(names)), names
        ports = [p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])]
        assert len(ports) == len(set(ports)), f"two containers of one pod share a port: {ports}"
        for c in spec["containers"]:
            assert c["image"] in (IMAGE, SERVING_IMAGE), c["image"]
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert "memory" in c["resources"]["limits"] and "memory" in c["resources"]["requests"]
            mounts = {m["name"] for m in c.get("volumeMounts", [])}
            assert mounts <= set(names), f"{c['name']} mounts undeclared volumes {mounts - set(names)}"
            port_names = {p["name"] for p in c.get("ports", [])}
            for probe in ("livenessProbe", "readinessProbe"):
                assert c[probe]["httpGet"]["port"] in port_names, f"{c['name']} {probe} port"
            declared = {p["containerPort"] for p in c.get("ports", [])}
            for arg in c["args"]:
                if arg.startswith(("--port=", "--grpc-port=")):
                    assert int(arg.split("=", 1)[1]) in declared, f"{c['name']}: {arg} is not a containerPort"
    for svc in (o for o in objs if o["kind"] == "Service"):
        pods = [
            o
            for o in objs
            if o["kind"] in ("DaemonSet", "Deployment")
            and svc["spec"]["selector"].items() <= o["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(pods) == 1, f"Service {svc['metadata']['name']} selects {len(pods)} workloads"
        port_names = {p["name"] for c in pod_spec(pods[0])["containers"] for p in c.get("ports", [])}
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in port_names, f"Service port {port} targets no container port"
    for mon in (o for o in objs if o["kind"] == "ServiceMonitor"):
        svcs = [
            o
            for o in objs
            if o["kind"] == "Service"
            and mon["spec"]["selector"]["matchLabels"].items() <= o["metadata"]["labels"].items()
        ]
        assert len(svcs) == 1
        for endpoint in mon["spec"]["endpoints"]:
            assert endpoint["port"] in {p["name"] for p in svcs[0]["spec"]["ports"]}
            assert endpoint["honorLabels"] is True, "the exporter's pod/namespace labels must survive"


def test_validation_rejects_a_typo() -> None:
    """The validators catch what they are here for: an unknown field, a bad type."""
    ds = find(render(DEPLOY / "exporter"), "DaemonSet", "gpuobs-exporter")
    broken = copy.deepcopy(ds)
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
    mon = copy.deepcopy(find(render(DEPLOY / "exporter"), "ServiceMonitor", "gpuobs-exporter"))
    mon["spec"]["endpoints"][0]["honourLabels"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate(mon)


# --- the exporter -----------------------------------------------------------------------------------------


def test_exporter_daemonset_matches_the_exporter_code() -> None:
    objs = render(DEPLOY / "exporter")
    ds = find(objs, "DaemonSet", "gpuobs-exporter")
    spec = pod_spec(ds)
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert "runtimeClassName" not in spec
    c = container(ds, "exporter")
    assert {"--backend=nvml", "--naming=both", "--address=0.0.0.0"} <= set(c["args"])
    env = {e["name"]: e for e in c["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    for name, path in (
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
        ("NODE_NAME", "spec.nodeName"),
    ):
        assert env[name]["valueFrom"]["fieldRef"]["fieldPath"] == path
    # The socket the exporter dials by default lies inside the read-only hostPath mount of its directory.
    volumes = {v["name"]: v for v in spec["volumes"]}
    mount = next(m for m in c["volumeMounts"] if volumes[m["name"]].get("hostPath"))
    assert mount["readOnly"] is True
    assert DEFAULT_POD_RESOURCES_SOCKET == podresources.DEFAULT_SOCKET
    assert mount["mountPath"] == os.path.dirname(DEFAULT_POD_RESOURCES_SOCKET)
    assert volumes[mount["name"]]["hostPath"]["path"] == os.path.dirname(DEFAULT_POD_RESOURCES_SOCKET)
    assert not any(a.startswith("--pod-resources-socket") for a in c["args"]), "the default path is mounted"
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["path"] == "/healthz"
    overlay = find(render(DEPLOY / "exporter/overlays/runtimeclass-nvidia"), "DaemonSet", "gpuobs-exporter")
    assert pod_spec(overlay)["runtimeClassName"] == "nvidia"
    assert container(overlay, "exporter") == c, "the overlay changes nothing but the runtime class"


def test_manifest_flags_exist_in_the_cli() -> None:
    flags = {"export": help_flags("export"), "serve": help_flags("serve")}
    used: dict[str, set[str]] = {"export": set(), "serve": set()}
    for directory in kustomization_dirs():
        for obj in render(directory):
            if obj["kind"] not in ("DaemonSet", "Deployment"):
                continue
            for c in pod_spec(obj)["containers"]:
                verb = c["args"][0]
                assert c["command"] == ["gpuobs"] and verb in flags, f"{c['name']}: {c['command']} {verb}"
                used[verb].update(flag_names(c["args"]))
    assert used["export"] and used["serve"]
    for verb, names in used.items():
        assert names <= flags[verb], f"gpuobs {verb} has no {sorted(names - flags[verb])}"
    # GPUOBS_EXPORT_WEB_CONFIG (tls overlay) is the environment form of --web-config.
    assert "--web-config" in flags["export"]
    # Every GPUOBS_* variable a pod sets is one that `gpuobs <verb> --help` names, or a library setting.
    helps = {verb: help_text(verb) for verb in flags}
    library = {"GPUOBS_CONFIG", "GPUOBS_CACHE_DIR", kernel_names.SPAN_SAMPLE_ENV}
    for directory in kustomization_dirs():
        for obj in render(directory):
            if obj["kind"] not in ("DaemonSet", "Deployment"):
                continue
            for c in pod_spec(obj)["containers"]:
                verb = c["args"][0]
                for name in (item["name"] for item in c.get("env", [])):
                    if name.startswith("GPUOBS_") and name not in library:
                        found = re.search(rf"\b{name}\b", helps[verb])
                        assert found, f"{directory}: gpuobs {verb} reads no {name}"
    # The README's gpuobs flags too (the others belong to docker and kubectl).
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    readme = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    unknown = readme - flags["export"] - flags["serve"] - {"--target", "--from-file"}
    assert not unknown, f"deploy/README.md names flags gpuobs does not have: {sorted(unknown)}"


def test_exporter_container_runs_and_answers_its_probes(tmp_path: Path, spawn: Any) -> None:
    """The DaemonSet's own command line, on the sim backend on loopback: the probes and the ServiceMonitor
    path answer, and the exporter's RSS fits its memory request."""
    objs = render(DEPLOY / "exporter")
    c = container(find(objs, "DaemonSet", "gpuobs-exporter"), "exporter")
    mon = find(objs, "ServiceMonitor", "gpuobs-exporter")["spec"]["endpoints"][0]
    port = free_port()
    argv = command_line(
        c,
        {
            "--backend=nvml": "--backend=sim",
            "--address=0.0.0.0": "--address=127.0.0.1",
            f"--port={c['ports'][0]['containerPort']}": f"--port={port}",
        },
    )
    proc = spawn(argv, container_env(c, tmp_path))
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/", proc)
    for probe in ("livenessProbe", "readinessProbe"):
        status, _ = http_get(base + c[probe]["httpGet"]["path"])
        assert status == 200, probe
    for _ in range(5):
        status, body = http_get(base + mon["path"])
        assert status == 200
    assert b"DCGM_FI_DEV_GPU_UTIL" in body and b"gpuobs_" in body, "--naming=both serves both name sets"
    rss = rss_bytes(proc.pid)
    request = quantity_bytes(c["resources"]["requests"]["memory"])
    limit = quantity_bytes(c["resources"]["limits"]["memory"])
    assert rss < request < limit, f"RSS {rss / 2**20:.1f} MiB vs request {request / 2**20:.0f} MiB"
    assert rss < 80 * 10**6


def _tls_material(directory: Path, dns_name: str) -> bytes:
    """A CA and a server certificate for `dns_name` written as tls.crt/tls.key (cert-manager's layout)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=1), now + datetime.timedelta(hours=1)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("gpuobs test CA"))
        .issuer_name(name("gpuobs test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(dns_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca.public_bytes(serialization.Encoding.PEM)


def test_tls_overlay_end_to_end(tmp_path: Path, spawn: Any) -> None:
    """The overlay's web-config, laid out as its projected volume, with a certificate for the ServiceMonitor's
    serverName: the kubelet's HTTPS probes get /healthz without a password, the certificate verifies against
    serverName, Prometheus's credentials (from the scrape-auth Secret) get /metrics, none or wrong get 401."""
    objs = render(DEPLOY / "exporter/overlays/tls-basic-auth")
    ds = find(objs, "DaemonSet", "gpuobs-exporter")
    c = container(ds, "exporter")
    endpoint = find(objs, "ServiceMonitor", "gpuobs-exporter")["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "https"
    secrets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Secret"}
    for ref in endpoint["basicAuth"].values():
        assert ref["key"] in secrets[ref["name"]]["stringData"]
    auth = (
        secrets[endpoint["basicAuth"]["username"]["name"]]["stringData"]["username"],
        secrets[endpoint["basicAuth"]["password"]["name"]]["stringData"]["password"],
    )

    # Lay out the projected volume: each source Secret's items under the mount path.
    volume = next(v for v in pod_spec(ds)["volumes"] if v["name"] == "web-config")
    mount = next(m for m in c["volumeMounts"] if m["name"] == "web-config")
    assert mount["readOnly"] is True
    web_dir = tmp_path / "web"
    web_dir.mkdir()
    ca_pem = _tls_material(tmp_path, endpoint["tlsConfig"]["serverName"])
    for source in volume["projected"]["sources"]:
        secret = source["secret"]
        for item in secret["items"]:
            if secret["name"] in secrets:
                data = secrets[secret["name"]]["stringData"][item["key"]].encode()
            else:  # the certificate Secret the user creates (cert-manager or kubectl create secret tls)
                data = (tmp_path / item["key"]).read_bytes()
            (web_dir / item["path"]).write_bytes(data)
    env = container_env(c, tmp_path)
    config_path = Path(env["GPUOBS_EXPORT_WEB_CONFIG"])
    assert config_path.parent == Path(mount["mountPath"])
    env["GPUOBS_EXPORT_WEB_CONFIG"] = str(web_dir / config_path.name)
    users = yaml.safe_load((web_dir / config_path.name).read_text())["basic_auth_users"]
    assert bcrypt.checkpw(auth[1].encode(), users[auth[0]].encode()), "placeholder password and hash differ"

    port = free_port()
    argv = command_line(
        c,
        {
            "--backend=nvml": "--backend=sim",
            "--address=0.0.0.0": "--address=127.0.0.1",
            f"--port={c['ports'][0]['containerPort']}": f"--port={port}",
        },
    )
    proc = spawn(argv, env)
    kubelet = ssl.create_default_context()  # the kubelet's HTTPS probes do not verify the certificate
    kubelet.check_hostname = False
    kubelet.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{port}"
    wait_until_up(url + "/healthz", proc, kubelet)
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["scheme"] == "HTTPS"
        assert http_get(url + c[probe]["httpGet"]["path"], kubelet)[0] == 200, f"{probe} without a password"
    # Prometheus dials the pod IP and checks the certificate against the CA and serverName.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        strict = ssl.create_default_context(cadata=ca_pem.decode())
        with strict.wrap_socket(raw, server_hostname=endpoint["tlsConfig"]["serverName"]) as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    prometheus = ssl.create_default_context(cadata=ca_pem.decode())
    prometheus.check_hostname = False  # urllib would check 127.0.0.1; the name was checked just above
    status, body = http_get(url + endpoint["path"], prometheus, auth)
    assert status == 200 and b"gpuobs_" in body
    assert http_get(url + endpoint["path"], prometheus)[0] == 401
    assert http_get(url + endpoint["path"], prometheus, (auth[0], auth[1] + "x"))[0] == 401


# --- serving and the sidecar ------------------------------------------------------------------------------


def test_serving_deployment_matches_the_server() -> None:
    from gpuobs.serving.http import ServerConfig, ServingRuntime, create_app
    from gpuobs.serving.model import loader

    objs = render(DEPLOY / "serving")
    dep = find(objs, "Deployment", "gpuobs-serve")
    c = container(dep, "server")
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    app = create_app(ServingRuntime(ServerConfig()))
    routes = {(r.path, m) for r in app.routes for m in (getattr(r, "methods", None) or ())}
    for probe in ("livenessProbe", "readinessProbe"):
        assert (c[probe]["httpGet"]["path"], "GET") in routes, probe
    assert ("/metrics", "GET") in routes
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert f"--port={ports['http']}" in c["args"] and f"--grpc-port={ports['grpc']}" in c["args"]
    # The embedded model is written to the cache directory: it must be the writable emptyDir.
    env = {e["name"]: e.get("value") for e in c["env"]}
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    os.environ["GPUOBS_CACHE_DIR"], saved = str(env["GPUOBS_CACHE_DIR"]), os.environ.get("GPUOBS_CACHE_DIR")
    try:
        assert str(loader.default_cache_dir()) in mounts
    finally:
        if saved is None:
            del os.environ["GPUOBS_CACHE_DIR"]
        else:
            os.environ["GPUOBS_CACHE_DIR"] = saved
    assert pod_spec(dep)["securityContext"]["runAsNonRoot"] is True


def _probe_window_s(probe: dict[str, Any]) -> int:
    """How long a probe must fail in a row before the kubelet acts (Kubernetes defaults: 10 s, 3)."""
    return int(probe.get("periodSeconds", 10)) * int(probe.get("failureThreshold", 3))


def _engine_option(args: list[str], key: str) -> str | None:
    """The value of `--engine-option=KEY=V` / `-E KEY=V` in a container's args, if set."""
    pairs = [a.split("=", 1)[1] for a in args if a.startswith("--engine-option=")]
    pairs += [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-E", "--engine-option")]
    values = [v for k, _, v in (p.partition("=") for p in pairs) if k.replace("-", "_") == key]
    return values[-1] if values else None


def _flag(args: list[str], name: str) -> str | None:
    """The value of `NAME=V` / `NAME V` in a container's args, if set."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    values += [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]
    return values[-1] if values else None


@pytest.mark.parametrize("variant", ["serving", "sidecar"])
def test_serving_probes_agree_with_the_engine_liveness(variant: str) -> None:
    """Liveness on /health (503 when the engine is dead or a step runs past its stall budget), readiness on
    /ready, a startup probe instead of a guessed initial delay; the windows fit the stall budget."""
    from gpuobs.serving.liveness import STALL_BUDGET_FLOOR_S

    dep = find(render(DEPLOY / variant), "Deployment", "gpuobs-serve")
    c = container(dep, "server")
    live, ready, start = c["livenessProbe"], c["readinessProbe"], c["startupProbe"]
    assert (live["httpGet"]["path"], ready["httpGet"]["path"], start["httpGet"]["path"]) == (
        "/health",
        "/ready",
        "/health",
    )
    assert {p["httpGet"]["port"] for p in (live, ready, start)} == {"http"}
    # /health answers 200 while the model loads, so liveness needs no delay once the port is open
    assert "initialDelaySeconds" not in live and _probe_window_s(start) >= 120
    # one slow or lost probe restarts nothing, and a probe answers before the next is due
    assert live["failureThreshold"] >= 2
    for probe in (live, ready, start):
        assert probe["timeoutSeconds"] < probe["periodSeconds"]
    # a stalled or dead pod leaves the Service before the kubelet restarts it
    assert _probe_window_s(ready) < _probe_window_s(live)
    # /health turns 503 only once a step has run for the whole budget; the kubelet then confirms it within
    # at most one more budget, so a hang is restarted within twice the budget
    explicit = _engine_option(c["args"], "stall_budget_s")
    budget = float(explicit) if explicit is not None else STALL_BUDGET_FLOOR_S  # the default is never lower
    assert _probe_window_s(live) <= budget
    # SIGTERM: the server's drain (--drain-timeout-s) and what follows it (gRPC grace, engine stop) fit the
    # grace period, so the kubelet's SIGKILL never cuts a request the drain would have ended with an error
    from gpuobs.serving.http.runtime import DRAIN_TIMEOUT_S_DEFAULT, SHUTDOWN_TAIL_S

    drain = _flag(c["args"], "--drain-timeout-s")
    drain_s = float(drain) if drain is not None else DRAIN_TIMEOUT_S_DEFAULT
    assert pod_spec(dep)["terminationGracePeriodSeconds"] >= drain_s + SHUTDOWN_TAIL_S


def test_sidecar_adds_the_exporter_to_the_inference_pod() -> None:
    serving = find(render(DEPLOY / "serving"), "Deployment", "gpuobs-serve")
    objs = render(DEPLOY / "sidecar")
    dep = find(objs, "Deployment", "gpuobs-serve")
    names = [c["name"] for c in pod_spec(dep)["containers"]]
    assert sorted(names) == ["gpuobs-exporter", "server"]
    # kustomize puts the added container first; `kubectl logs/exec` must still pick the server.
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kubectl.kubernetes.io/default-container"] == "server"
    assert container(dep, "server") == container(serving, "server"), "the patch leaves the server alone"
    side = container(dep, "gpuobs-exporter")
    daemon = container(find(render(DEPLOY / "exporter"), "DaemonSet", "gpuobs-exporter"), "exporter")
    assert side["args"] == daemon["args"] and side["image"] == daemon["image"]
    assert side["securityContext"] == daemon["securityContext"]
    assert "nvidia.com/gpu" not in side["resources"].get("limits", {}), "the sidecar must not take a GPU"
    socket_dir = os.path.dirname(DEFAULT_POD_RESOURCES_SOCKET)
    mount = next(m for m in side["volumeMounts"] if m["mountPath"] == socket_dir)
    assert mount["readOnly"] is True
    svc = find(objs, "Service", "gpuobs-serve")
    assert {p["name"] for p in svc["spec"]["ports"]} == {"http", "grpc", "gpu-metrics"}


# --- the image --------------------------------------------------------------------------------------------


def test_dockerfile_and_readme_agree_with_the_project() -> None:
    """Images cannot be built here (no registry for base images); check what can be: the Dockerfile copies
    every package folder of pyproject.toml, installs extras that exist, and the README documents the
    placeholder image names the manifests use."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = set(project["tool"]["setuptools"]["package-dir"].values())
    copied = {m.rstrip("/") for m in re.findall(r"^COPY (\S+)/ \S+/$", text, re.M)}
    assert copied == folders, f"Dockerfile COPY {sorted(copied)} vs package-dir {sorted(folders)}"
    for src in re.findall(r"^COPY (?!--)(.+) \S+$", text, re.M):
        for part in src.split():
            assert (ROOT / part).exists(), f"Dockerfile copies missing {part}"
    assert "FROM ${PYTHON_IMAGE}" in text and "ARG PYTHON_IMAGE=python:3.11-slim" in text
    extras = set(project["project"]["optional-dependencies"])
    for group in re.findall(r"\.whl\)\[([a-z,]+)\]", text):
        assert set(group.split(",")) <= extras
    assert {"serving"} <= {e for g in re.findall(r"\.whl\)\[([a-z,]+)\]", text) for e in g.split(",")}
    targets = set(re.findall(r"^FROM \S+ AS (\S+)$", text, re.M))
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for target, image in (("exporter", IMAGE), ("serving", SERVING_IMAGE)):
        assert target in targets
        assert f"--target {target} -t {image} ." in readme, f"README builds {image} from target {target}"
    assert "placeholder" in readme.lower()
