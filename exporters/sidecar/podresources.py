"""Pod attribution: which pod, namespace and container holds each GPU, from the kubelet pod-resources API.

The kubelet serves `v1.PodResourcesLister` over a unix socket (default
`/var/lib/kubelet/pod-resources/kubelet.sock`, mounted read-only into the exporter's pod). Its
`List` answer names, per container, the device ids each device plugin assigned: with NVIDIA's
device plugin the resource is `nvidia.com/gpu` (or `nvidia.com/mig-<profile>` with the mixed MIG
strategy, `nvidia.com/gpu.shared` when time-slicing renames it) and the ids are GPU UUIDs
(`GPU-...`) or MIG UUIDs (`MIG-...`); time-sliced replicas carry a `::<n>` suffix, dropped here,
and a plugin run with `deviceIDStrategy=index` reports GPU indices (`"0"`, `"1"`) instead, which
`lookup()` accepts as well.

`PodResourcesClient` is one call; `PodAttributor` refreshes the map in a background thread and
answers `lookup()` from memory, so the scrape path never waits on the kubelet. No socket means no
pod labels and one info log; a failing kubelet means one warning and the last known map is kept.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuobs.errors import ExporterError
from gpuobs.exporters.sidecar._podresources_proto import LIST_METHOD, messages

if TYPE_CHECKING:
    import grpc

__all__ = [
    "DEFAULT_SOCKET",
    "PodAttributor",
    "PodRef",
    "PodResourcesClient",
    "PodResourcesError",
    "PodResourcesUnavailable",
    "is_gpu_resource",
]

logger = logging.getLogger(__name__)

#: Where the kubelet serves the pod-resources API.
DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"

# The kubelet caps answers at 16 MiB too; gRPC's default of 4 MiB is short on large nodes.
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class PodRef:
    """The container a device is assigned to."""

    pod: str
    namespace: str
    container: str


class PodResourcesError(ExporterError):
    """The kubelet pod-resources API did not answer (RPC error, timeout, bad reply)."""


class PodResourcesUnavailable(PodResourcesError):
    """The pod-resources socket does not exist: not on a Kubernetes node, or not mounted."""


def is_gpu_resource(resource_name: str) -> bool:
    """Whether a device-plugin resource is an NVIDIA GPU or MIG slice (`nvidia.com/gpu`, `.../mig-*`)."""
    return (
        resource_name == "nvidia.com/gpu"
        or resource_name.startswith("nvidia.com/gpu.")
        or resource_name.startswith("nvidia.com/mig-")
    )


def _device_key(device_id: str) -> str:
    # Time-slicing and MPS replicas are announced as `<uuid>::<replica>`.
    return device_id.split("::", 1)[0]


def _not_a_socket(path: str) -> str | None:
    """Why `path` is not a unix socket (absent, or a file or folder: a mistyped flag), or None when it is."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return f"no pod-resources socket at {path}"
    if stat.S_ISSOCK(mode):
        return None
    return f"{path} is a {'folder' if stat.S_ISDIR(mode) else 'file'}, not the kubelet's pod-resources socket"


class PodResourcesClient:
    """A client of the kubelet's `v1.PodResourcesLister/List` over its unix socket."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, timeout_s: float = 5.0) -> None:
        self.socket_path = socket_path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._list: Any = None

    def _call(self) -> Any:
        import grpc

        with self._lock:
            if self._channel is None:
                msgs = messages()
                self._channel = grpc.insecure_channel(
                    f"unix:{os.path.abspath(self.socket_path)}",
                    options=[("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES)],
                )
                self._list = self._channel.unary_unary(
                    LIST_METHOD,
                    request_serializer=msgs.ListPodResourcesRequest.SerializeToString,
                    response_deserializer=msgs.ListPodResourcesResponse.FromString,
                )
            return self._list

    def list_pod_resources(self) -> Any:
        """The raw `ListPodResourcesResponse` message.

        Raises PodResourcesUnavailable when the socket is absent, PodResourcesError when the call fails.
        """
        import grpc

        why = _not_a_socket(self.socket_path)
        if why is not None:
            raise PodResourcesUnavailable(why)
        call = self._call()
        try:
            return call(messages().ListPodResourcesRequest(), timeout=self.timeout_s)
        except grpc.RpcError as exc:
            # A fresh channel next time: a channel in reconnect backoff fails fast for up to minutes
            # after the kubelet is back.
            self.close()
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            name = code.name if code is not None else "UNKNOWN"
            raise PodResourcesError(f"pod-resources List on {self.socket_path}: {name}: {details}") from exc

    def list_gpu_assignments(self) -> dict[str, PodRef]:
        """Each GPU/MIG device id (UUID, replica suffix dropped) mapped to the container holding it.

        A device shared by several containers (time-slicing) maps to the first in (namespace, pod,
        container) order, so the answer does not depend on the kubelet's ordering.
        """
        response = self.list_pod_resources()
        owners: dict[str, list[PodRef]] = {}
        for pod in response.pod_resources:
            for container in pod.containers:
                ref = PodRef(pod=pod.name, namespace=pod.namespace, container=container.name)
                for devices in container.devices:
                    if not is_gpu_resource(devices.resource_name):
                        continue
                    for device_id in devices.device_ids:
                        owners.setdefault(_device_key(device_id), []).append(ref)
        assignments: dict[str, PodRef] = {}
        for device, refs in owners.items():
            refs = sorted(set(refs), key=lambda r: (r.namespace, r.pod, r.container))
            if len(refs) > 1:
                logger.debug("device %s is shared by %d containers; labelling it with %s/%s",
                             device, len(refs), refs[0].namespace, refs[0].pod)
            assignments[device] = refs[0]
        return assignments

    def close(self) -> None:
        """Close the gRPC channel (a later call opens a new one)."""
        with self._lock:
            channel, self._channel, self._list = self._channel, None, None
        if channel is not None:
            channel.close()

    def __enter__(self) -> PodResourcesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PodAttributor:
    """Keeps a device id -> PodRef map fresh in a background thread; `lookup()` never blocks on I/O."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, refresh_s: float = 10.0,
                 timeout_s: float = 5.0) -> None:
        if refresh_s <= 0:
            raise ValueError("refresh_s must be positive")
        self.socket_path = socket_path
        self.refresh_s = refresh_s
        self._client = PodResourcesClient(socket_path, timeout_s=timeout_s)
        self._mapping: dict[str, PodRef] = {}
        # "new" (never asked), "absent" (no socket yet), "ok", "failing"
        self._state = "new"
        self._ever_answered = False
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        """Whether the last refresh got an answer from the kubelet."""
        return self._state == "ok"

    def mapping(self) -> dict[str, PodRef]:
        """A copy of the current device id -> PodRef map."""
        return dict(self._mapping)

    def lookup(self, uuid: str) -> PodRef | None:
        """The container holding a GPU (UUID, MIG UUID or plugin device id), or None."""
        return self._mapping.get(uuid)

    def refresh_once(self) -> bool:
        """Ask the kubelet once; True when the map was replaced by a fresh answer."""
        with self._refresh_lock:
            try:
                mapping = self._client.list_gpu_assignments()
            except PodResourcesUnavailable as exc:
                if not self._ever_answered:
                    if self._state != "absent":
                        logger.info("kubelet pod-resources: %s: GPU metrics carry no pod/namespace/container "
                                    "labels", exc)
                    self._state = "absent"
                    return False
                self._failed(f"socket {self.socket_path} disappeared")
                return False
            except PodResourcesError as exc:
                self._failed(str(exc))
                return False
            if self._state != "ok":
                logger.info("kubelet pod-resources answering on %s: %d GPU devices assigned to pods",
                            self.socket_path, len(mapping))
            self._state = "ok"
            self._ever_answered = True
            self._mapping = mapping
            return True

    def _failed(self, reason: str) -> None:
        if self._state != "failing":
            logger.warning("kubelet pod-resources failed (%s); keeping the last known pod labels "
                           "(%d devices) and retrying every %.0f s", reason, len(self._mapping),
                           self.refresh_s)
        else:
            logger.debug("kubelet pod-resources still failing: %s", reason)
        self._state = "failing"

    def start(self) -> PodAttributor:
        """Refresh once now (bounded by the call timeout), then every `refresh_s` in a daemon thread."""
        if self._thread is not None:
            return self
        self._stop.clear()
        self.refresh_once()
        self._thread = threading.Thread(target=self._run, name="gpuobs-podresources", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                self.refresh_once()
            except Exception:  # the thread must outlive any surprise; the next round retries
                logger.exception("pod-resources refresh raised")

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the refresh thread and close the channel."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
        self._client.close()

    def __enter__(self) -> PodAttributor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
