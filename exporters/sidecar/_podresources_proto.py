"""Message classes of the kubelet pod-resources v1 API, built at run time (no generated _pb2 code).

Generated `_pb2` modules are pinned to the protobuf version that generated them and break on
machines with another one, so the schema is spelled here as a `FileDescriptorProto` and turned
into classes in a private descriptor pool. Field names and numbers follow
`k8s.io/kubelet/pkg/apis/podresources/v1/api.proto` (package `v1`, service `PodResourcesLister`);
only the messages that `List` needs are declared (fields not declared, such as memory and
dynamic resources, are kept as unknown fields and ignored).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["LIST_METHOD", "PodResourcesMessages", "messages"]

#: Full gRPC method path of `PodResourcesLister.List`.
LIST_METHOD = "/v1.PodResourcesLister/List"

_PACKAGE = "v1"
_FILE_NAME = "gpuobs/podresources/v1/api.proto"

_LABEL_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_LABEL_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_TYPE_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_TYPE_INT64 = descriptor_pb2.FieldDescriptorProto.TYPE_INT64
_TYPE_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE

# message name -> [(field name, number, label, type, message type name or None)]
_SCHEMA: dict[str, list[tuple[str, int, int, int, str | None]]] = {
    "ListPodResourcesRequest": [],
    "ListPodResourcesResponse": [
        ("pod_resources", 1, _LABEL_REPEATED, _TYPE_MESSAGE, "PodResources"),
    ],
    "PodResources": [
        ("name", 1, _LABEL_OPTIONAL, _TYPE_STRING, None),
        ("namespace", 2, _LABEL_OPTIONAL, _TYPE_STRING, None),
        ("containers", 3, _LABEL_REPEATED, _TYPE_MESSAGE, "ContainerResources"),
    ],
    "ContainerResources": [
        ("name", 1, _LABEL_OPTIONAL, _TYPE_STRING, None),
        ("devices", 2, _LABEL_REPEATED, _TYPE_MESSAGE, "ContainerDevices"),
        ("cpu_ids", 3, _LABEL_REPEATED, _TYPE_INT64, None),
    ],
    "ContainerDevices": [
        ("resource_name", 1, _LABEL_OPTIONAL, _TYPE_STRING, None),
        ("device_ids", 2, _LABEL_REPEATED, _TYPE_STRING, None),
        ("topology", 3, _LABEL_OPTIONAL, _TYPE_MESSAGE, "TopologyInfo"),
    ],
    "TopologyInfo": [
        ("nodes", 1, _LABEL_REPEATED, _TYPE_MESSAGE, "NUMANode"),
    ],
    "NUMANode": [
        ("ID", 1, _LABEL_OPTIONAL, _TYPE_INT64, None),
    ],
}


@dataclass(frozen=True)
class PodResourcesMessages:
    """The message classes a client or a test server of `List` needs."""

    ListPodResourcesRequest: Any
    ListPodResourcesResponse: Any
    PodResources: Any
    ContainerResources: Any
    ContainerDevices: Any
    TopologyInfo: Any
    NUMANode: Any


def _file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package=_PACKAGE, syntax="proto3")
    for message_name, fields in _SCHEMA.items():
        message = fdp.message_type.add(name=message_name)
        for field_name, number, label, field_type, type_name in fields:
            field = message.field.add(name=field_name, number=number, label=label, type=field_type)
            field.json_name = _json_name(field_name)
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name}"
    service = fdp.service.add(name="PodResourcesLister")
    service.method.add(name="List", input_type=f".{_PACKAGE}.ListPodResourcesRequest",
                       output_type=f".{_PACKAGE}.ListPodResourcesResponse")
    return fdp


def _json_name(field_name: str) -> str:
    head, *rest = field_name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _message_class(descriptor: Any) -> Any:
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:  # protobuf >= 4.22
        return get_class(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)  # pragma: no cover


@functools.cache
def messages() -> PodResourcesMessages:
    """Build (once) the pod-resources v1 message classes in a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(_file_descriptor_proto().SerializeToString())
    classes = {
        name: _message_class(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}")) for name in _SCHEMA
    }
    return PodResourcesMessages(**classes)
