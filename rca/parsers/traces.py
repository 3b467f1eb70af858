"""OTLP JSON trace files -> span Evidence (the OpenTelemetry Collector `file` exporter format).

The file holds one `ExportTraceServiceRequest` JSON object per line (or one pretty-printed object):
`resourceSpans[].resource.attributes`, `scopeSpans[].spans[]` with hex `traceId`/`spanId`, string
nanosecond times and typed attribute values. Each span becomes a SPAN record keyed by its name with
its duration in seconds; an `exception` span event also becomes a `python_exception` record.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import logs as log_fields
from gpuobs.names import spans as sp
from gpuobs.rca import keys

__all__ = ["evidence_from_otlp", "parse_otlp_text"]

logger = logging.getLogger(__name__)

_MAX_SPANS = 500_000
_STATUS = {
    0: "unset",
    1: "ok",
    2: "error",
    "STATUS_CODE_UNSET": "unset",
    "STATUS_CODE_OK": "ok",
    "STATUS_CODE_ERROR": "error",
}
_KIND = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return _attrs((v["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _attrs(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _value(item.get("value"))
    return out


def _span_kind(kind: Any) -> str | None:
    """OTLP/JSON writes the enum as an integer; protobuf's JSON mapping as its name (SPAN_KIND_SERVER)."""
    if isinstance(kind, int):
        return _KIND.get(kind, str(kind))
    if isinstance(kind, str):
        return kind.removeprefix("SPAN_KIND_").lower()
    return None


def _nanos(v: Any) -> float | None:
    try:
        return int(v) / 1e9
    except (TypeError, ValueError):
        return None


def _entity(res: dict[str, Any], span: dict[str, Any]) -> Entity:
    def pick(*names: str) -> Any:
        for n in names:
            for src in (span, res):
                if src.get(n) not in (None, ""):
                    return src[n]
        return None

    # gpuobs' own keys first, then the spellings other producers use.
    gpu = pick(sp.GPU_INDEX, "hw.gpu.index", log_fields.GPU, log_fields.DEVICE_ID)
    return Entity(
        host=pick(sp.HOST_NAME, sp.K8S_NODE_NAME),
        gpu_uuid=pick("gpu.uuid", "hw.id", "gpu_uuid"),
        gpu_index=int(gpu) if isinstance(gpu, int) or (isinstance(gpu, str) and gpu.isdecimal()) else None,
        pod=pick(sp.K8S_POD_NAME),
        namespace=pick(sp.K8S_NAMESPACE_NAME),
        container=pick(sp.K8S_CONTAINER_NAME),
        model=pick(
            sp.GEN_AI_REQUEST_MODEL, sp.GEN_AI_RESPONSE_MODEL, log_fields.MODEL_NAME, log_fields.MODEL_ID
        ),
        tenant=pick(log_fields.TENANT, sp.GPUOBS_TENANT),
    )


def _requests(text: str, source: str) -> Iterator[dict[str, Any]]:
    stripped = text.strip()
    if not stripped:
        return
    try:
        whole = json_input.loads(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        yield whole
        return
    if isinstance(whole, list):
        for n, item in enumerate(whole, start=1):
            if not isinstance(item, dict):
                what = _json_type(item)
                raise InputError(f"{source}: item {n} of the JSON array is {what}, not an OTLP request")
            yield item
        return
    for n, line in enumerate(stripped.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json_input.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: line {n} is not OTLP JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputError(f"{source}: line {n} is {_json_type(obj)}, not an OTLP request")
        yield obj


def _json_type(value: Any) -> str:
    """How a JSON value that is not an object reads in a message ("a number", "an array")."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else names.get(type(value), "not an object")


def evidence_from_otlp(request: dict[str, Any], source: str = "traces") -> list[Evidence]:
    """Span evidence from one ExportTraceServiceRequest (OTLP/JSON)."""
    out: list[Evidence] = []
    for rs in request.get("resourceSpans") or request.get("resource_spans") or []:
        if not isinstance(rs, dict):
            continue
        res = _attrs((rs.get("resource") or {}).get("attributes"))
        for ss in (
            rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or rs.get("scope_spans") or []
        ):
            if not isinstance(ss, dict):
                continue
            for span in ss.get("spans") or []:
                if isinstance(span, dict):
                    out.extend(_span(span, res, source))
    return out


def _span(span: dict[str, Any], res: dict[str, Any], source: str) -> list[Evidence]:
    name = span.get("name")
    start, end = _nanos(span.get("startTimeUnixNano")), _nanos(span.get("endTimeUnixNano"))
    if not isinstance(name, str) or start is None:
        return []
    attrs = _attrs(span.get("attributes"))
    status = span.get("status") or {}
    entity = _entity(res, attrs)
    duration = max(0.0, end - start) if end is not None else None
    meta: dict[str, Any] = dict(attrs)
    meta.update(
        {
            "trace_id": span.get("traceId") or span.get("trace_id"),
            "span_id": span.get("spanId") or span.get("span_id"),
            "parent_span_id": span.get("parentSpanId") or span.get("parent_span_id") or None,
            "status": _STATUS.get(status.get("code", 0), str(status.get("code"))),
            "span_kind": _span_kind(span.get("kind")),
        }
    )
    if status.get("message"):
        meta["status_message"] = status["message"]
    out = [
        Evidence(
            kind=EvidenceKind.SPAN,
            key=name,
            value=duration,
            source=source,
            time=start,
            entity=entity,
            raw=f"span {name} {duration if duration is not None else '?'}s status={meta['status']}",
            attrs={k: v for k, v in meta.items() if v is not None},
        )
    ]
    for event in span.get("events") or []:
        if not isinstance(event, dict) or event.get("name") != sp.EXCEPTION_EVENT:
            continue
        ea = _attrs(event.get("attributes"))
        etype = ea.get(sp.EXCEPTION_TYPE)
        if not etype:
            continue
        out.append(
            Evidence(
                kind=EvidenceKind.LOG,
                key=keys.PYTHON_EXCEPTION,
                value=str(etype),
                source=source,
                time=_nanos(event.get("timeUnixNano")) or start,
                entity=entity,
                raw=f"{etype}: {ea.get(sp.EXCEPTION_MESSAGE, '')}"[:2000],
                attrs={
                    "message": str(ea.get(sp.EXCEPTION_MESSAGE, ""))[:500],
                    "span": name,
                    "trace_id": meta["trace_id"],
                    "type": str(etype).rsplit(".", 1)[-1],
                },
            )
        )
    return out


def parse_otlp_text(text: str, source: str = "traces") -> list[Evidence]:
    """Span evidence from the text of an OTLP JSON file (JSON lines or one document)."""
    out: list[Evidence] = []
    for request in _requests(text, source):
        if "resourceSpans" not in request and "resource_spans" not in request:
            raise InputError(f"{source}: JSON without 'resourceSpans' is not an OTLP trace export")
        out.extend(evidence_from_otlp(request, source))
        if len(out) > _MAX_SPANS:
            logger.warning("%s: more than %d spans, the rest is ignored", source, _MAX_SPANS)
            break
    return out
