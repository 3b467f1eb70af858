"""The one place that wires the OpenTelemetry SDK (library code depends on the API only)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["configure_tracing", "node_name", "resource_attributes"]

logger = logging.getLogger(__name__)


def node_name() -> str:
    """The node name: `NODE_NAME` (downward API; in a pod the hostname is the pod name) or the hostname."""
    import os
    import socket

    return os.environ.get("NODE_NAME") or socket.gethostname()


def resource_attributes(service_name: str) -> dict[str, str]:
    """Resource attributes with `host.name` and, inside Kubernetes, pod and namespace."""
    import os

    from gpuobs.names import spans

    attrs = {spans.SERVICE_NAME: service_name, spans.HOST_NAME: node_name()}
    pod = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME")
    namespace = os.environ.get("POD_NAMESPACE")
    if os.environ.get("KUBERNETES_SERVICE_HOST") and pod:
        attrs[spans.K8S_POD_NAME] = pod
    if namespace:
        attrs[spans.K8S_NAMESPACE_NAME] = namespace
    return attrs


def configure_tracing(
    service_name: str,
    otlp_endpoint: str | None = None,
    exporter: SpanExporter | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """A TracerProvider exporting to OTLP/HTTP at `otlp_endpoint` and/or to `exporter`."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create(resource_attributes(service_name)))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = otlp_endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        logger.info("exporting spans over OTLP/HTTP to %s", endpoint)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
