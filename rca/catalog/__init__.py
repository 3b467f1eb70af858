"""The failure-signature catalog: one TOML file per signature, loaded into `Signature` objects.

Why TOML, one file per signature: the catalog is data that operators review and extend without
reading the engine (k8sgpt keeps one analyzer per file for the same reason); TOML is parsed by the
standard library (`tomllib`, no new dependency, unlike YAML), keeps comments, has no implicit type
coercion (YAML's `no`/`on`/octal traps), and its `[[require]]`/`[[support]]` arrays of tables read
like the rule they describe. The file name is the signature id, so a reviewer finds an id's rule
at once and the id set is visible in a directory listing. Python dataclass literals were rejected:
they would make the catalog code, and a typo would break the import of the whole engine instead of
one entry. A file that does not load is reported as a problem and the rest of the catalog loads.

Matcher fields (in `[[require]]`, `any = [...]` of a require clause, `[[support]]`, `[[rule_out]]`,
`[[explains]]`): `key` (evidence key or list), `metric` (a `domain.CONSTANT` in gpuobs.names,
resolved to the native name), `increase` (the same, for the increase of a counter over the window),
`kind`, `value`/`not_value` (lists, compared as text so 79 == "79"),
`cuda` (CUDA error names, expanded to every alias through gpuobs.cuda_errors), `min`/`max`
(numeric value bounds), `text`/`not_text` (regular expressions over the raw text), `attrs`/
`not_attrs` (attribute or metric label -> regex; `pod`, `namespace` and `container` fall back to the
record's entity), `attr_min`/`attr_max`, and for support `weight`
and `label`. The tag `generic` marks a catch-all signature (crash loop, engine death, timeout) that
never nests another candidate under itself. A variant (`[[variants]]`: `name`, `base`, `require`) may
have its own `rule_out` matchers, which drop that variant only. Clause fields: `name`, `count`,
`distinct` (count distinct values of an attribute), `sustained_s`, `before`/`after`/`near` (another
clause's name) and `within_s`.

Causality between signatures: `explains_signatures = [ids]` (when this signature holds, those are its
consequences: a flood of requests explains the engine death it caused) and `explained_by = [ids]` (the
same relation stated from the symptom's side). The ranking then nests the consequence under its cause
whichever is louder.

The text tier: `[text] phrases = { "phrase" = weight, ... }` lists general wordings of the failure
(lower case, matched on word boundaries, case-insensitively) with the author's prior weight in (0, 1).
`_text_weights.toml` beside the signatures holds the weights fitted on the labelled corpora
(`bench/fit_text_tier.py`), which replace the priors of the bundled catalog. Files whose name starts
with `_` are data, not signatures.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import EvidenceKind
from gpuobs.rca.anomalies import INCREASE_PREFIX
from gpuobs.rca.signature import (
    Clause,
    Matcher,
    Relation,
    Scope,
    Severity,
    Signature,
    SignatureError,
    Variant,
    resolve_metric,
)

__all__ = [
    "CATALOG_DIR",
    "TEXT_WEIGHTS_FILE",
    "Catalog",
    "catalog_with_overrides",
    "load_catalog",
    "load_text_weights",
    "normalise_phrase",
    "parse_signature",
]

logger = logging.getLogger(__name__)

CATALOG_DIR = Path(__file__).resolve().parent
TEXT_WEIGHTS_FILE = CATALOG_DIR / "_text_weights.toml"

_MATCHER_FIELDS = {
    "key",
    "metric",
    "increase",
    "kind",
    "value",
    "not_value",
    "cuda",
    "min",
    "max",
    "text",
    "not_text",
    "attrs",
    "not_attrs",
    "attr_min",
    "attr_max",
    "weight",
    "label",
}
_CLAUSE_FIELDS = {"name", "any", "count", "distinct", "sustained_s", "before", "after", "near", "within_s"}
_TOP_FIELDS = {
    "id",
    "title",
    "severity",
    "scope",
    "explanation",
    "remediation",
    "base",
    "priority",
    "tags",
    "require",
    "support",
    "rule_out",
    "explains",
    "variants",
    "explains_signatures",
    "explained_by",
    "text",
}
_TEXT_FIELDS = {"phrases"}
_VARIANT_FIELDS = {"name", "base", "require", "rule_out"}


@dataclass(frozen=True)
class Catalog:
    """The loaded signatures and, per file that failed to load, its error."""

    signatures: tuple[Signature, ...]
    problems: tuple[str, ...]

    def by_id(self) -> dict[str, Signature]:
        return {s.id: s for s in self.signatures}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _regex(where: str, pattern: Any) -> re.Pattern[str]:
    try:
        return re.compile(str(pattern))
    except re.error as exc:
        raise SignatureError(f"{where}: bad regular expression {pattern!r}: {exc}") from exc


def _cuda_aliases(names: Iterable[str]) -> set[str]:
    """Every spelling of the given CUDA errors (runtime name, driver name, code) that gpuobs knows."""
    out = {str(n) for n in names}
    try:
        cuda_errors = importlib.import_module("gpuobs.cuda_errors")
    except ImportError:
        return out
    by_name = getattr(cuda_errors, "by_name", None)
    for name in list(out):
        info = None
        if callable(by_name):
            try:
                info = by_name(name)
            except (KeyError, ValueError, LookupError):
                info = None
        if info is None:
            continue
        for attr in ("name", "runtime_name", "driver_name", "code", "runtime_code", "driver_code"):
            value = getattr(info, attr, None)
            if value is not None:
                out.add(str(value))
        for alias in getattr(info, "aliases", ()) or ():
            out.add(str(alias))
    return out


def _matcher(where: str, raw: Mapping[str, Any]) -> Matcher:
    unknown = set(raw) - _MATCHER_FIELDS
    if unknown:
        raise SignatureError(f"{where}: unknown matcher field(s) {sorted(unknown)}")
    keys = [str(k) for k in _as_list(raw.get("key"))]
    keys += [resolve_metric(str(ref)) for ref in _as_list(raw.get("metric"))]
    keys += [INCREASE_PREFIX + resolve_metric(str(ref)) for ref in _as_list(raw.get("increase"))]
    values = {str(v) for v in _as_list(raw.get("value"))}
    if raw.get("cuda"):
        values |= _cuda_aliases(str(v) for v in _as_list(raw["cuda"]))
    try:
        kinds = tuple(EvidenceKind(k) for k in _as_list(raw.get("kind")))
    except ValueError as exc:
        raise SignatureError(f"{where}: {exc}") from exc

    def bounds(name: str) -> tuple[tuple[str, float], ...]:
        table = raw.get(name) or {}
        return tuple((str(k), float(v)) for k, v in table.items())

    return Matcher(
        keys=tuple(keys),
        kinds=kinds,
        values=frozenset(_normalise(v) for v in values),
        not_values=frozenset(_normalise(v) for v in _as_list(raw.get("not_value"))),
        min=float(raw["min"]) if "min" in raw else None,
        max=float(raw["max"]) if "max" in raw else None,
        text=_regex(where, raw["text"]) if "text" in raw else None,
        not_text=_regex(where, raw["not_text"]) if "not_text" in raw else None,
        attrs=tuple((str(k), _regex(where, v)) for k, v in (raw.get("attrs") or {}).items()),
        not_attrs=tuple((str(k), _regex(where, v)) for k, v in (raw.get("not_attrs") or {}).items()),
        attr_min=bounds("attr_min"),
        attr_max=bounds("attr_max"),
        weight=float(raw.get("weight", 0.0)),
        label=str(raw.get("label", "")),
    )


def _normalise(value: Any) -> str:
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text.lower()
    return str(int(number)) if number.is_integer() else text.lower()


def _clause(where: str, index: int, raw: Mapping[str, Any]) -> Clause:
    name = str(raw.get("name") or f"c{index}")
    if "any" in raw:
        unknown = set(raw) - _CLAUSE_FIELDS
        if unknown:
            raise SignatureError(f"{where}: unknown clause field(s) {sorted(unknown)}")
        matchers = tuple(_matcher(f"{where}.{name}", m) for m in _as_list(raw["any"]))
    else:
        inline = {k: v for k, v in raw.items() if k not in _CLAUSE_FIELDS}
        matchers = (_matcher(f"{where}.{name}", inline),)
    if not matchers:
        raise SignatureError(f"{where}.{name}: a clause needs at least one matcher")
    given = [r for r in ("before", "after", "near") if r in raw]
    if len(given) > 1:
        raise SignatureError(f"{where}.{name}: give one of before/after/near, not {given}")
    relation: Relation | None = None
    other = ""
    if given:
        relation, other = Relation(given[0]), str(raw[given[0]])
    return Clause(
        name=name,
        matchers=matchers,
        count=int(raw.get("count", 1)),
        distinct=str(raw.get("distinct", "")),
        sustained_s=float(raw.get("sustained_s", 0.0)),
        relation=relation,
        other=other,
        within_s=float(raw["within_s"]) if "within_s" in raw else None,
    )


def normalise_phrase(phrase: str) -> str:
    """A text-tier phrase as it is matched: lower case, single spaces, typographic quotes made plain."""
    text = str(phrase).replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"')
    return " ".join(text.replace("\u201d", '"').lower().split())


def _phrases(where: str, raw: Any) -> tuple[tuple[str, float], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise SignatureError(f"{where}: `text` must be a table")
    unknown = set(raw) - _TEXT_FIELDS
    if unknown:
        raise SignatureError(f"{where}: unknown text field(s) {sorted(unknown)}")
    table = raw.get("phrases") or {}
    if not isinstance(table, Mapping):
        raise SignatureError(f"{where}: text.phrases must be a table of phrase = weight")
    out: dict[str, float] = {}
    for phrase, weight in table.items():
        norm = normalise_phrase(phrase)
        if len(norm) < 3:
            raise SignatureError(f"{where}: text phrase {phrase!r} is too short")
        value = float(weight)
        if not 0.0 < value < 1.0:
            raise SignatureError(f"{where}: text phrase {phrase!r} needs a weight in (0, 1), not {weight}")
        out[norm] = value
    return tuple(sorted(out.items()))


def _confidence(where: str, name: str, value: Any) -> float:
    """A confidence field (`base`): a number from 0 to 1. `base = nan` or `1e308` ranked a user's entry
    0.99 above every bundled cause; `"high"` failed with float()'s words and no field named."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise SignatureError(f"{where}: {name} must be a number from 0 to 1, not {value!r}")
    return float(value)


def parse_signature(data: Mapping[str, Any], where: str = "<catalog>") -> Signature:
    """Build a Signature from one parsed catalog entry; raises SignatureError naming the problem."""
    unknown = set(data) - _TOP_FIELDS
    if unknown:
        raise SignatureError(f"{where}: unknown field(s) {sorted(unknown)}")
    for required in ("id", "title", "severity", "scope", "explanation", "remediation"):
        if required not in data:
            raise SignatureError(f"{where}: missing field {required!r}")
    sig_id = str(data["id"])
    if not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", sig_id):
        raise SignatureError(f"{where}: id {sig_id!r} is not lower_snake_case")
    try:
        severity, scope = Severity(data["severity"]), Scope(data["scope"])
    except ValueError as exc:
        raise SignatureError(f"{where}: {exc}") from exc
    base = _confidence(where, "base", data.get("base", 0.6))
    raw_variants = _as_list(data.get("variants"))
    if "require" in data:
        raw_variants.insert(0, {"name": "main", "base": base, "require": data["require"]})
    if not raw_variants:
        raise SignatureError(f"{where}: needs `require` or `variants`")
    variants = []
    for number, raw in enumerate(raw_variants):
        unknown_v = set(raw) - _VARIANT_FIELDS
        if unknown_v:
            raise SignatureError(f"{where}: unknown variant field(s) {sorted(unknown_v)}")
        vname = str(raw.get("name", f"v{number}"))
        require = tuple(
            _clause(f"{where}[{vname}]", i, c) for i, c in enumerate(_as_list(raw.get("require")))
        )
        if not require:
            raise SignatureError(f"{where}[{vname}]: a variant needs at least one require clause")
        names = [c.name for c in require]
        if len(set(names)) != len(names):
            raise SignatureError(f"{where}[{vname}]: clause names repeat: {names}")
        for clause in require:
            if clause.relation is not None and clause.other not in names:
                raise SignatureError(
                    f"{where}[{vname}]: clause {clause.name} relates to unknown clause {clause.other!r}"
                )
        variant_rule_out = tuple(
            _matcher(f"{where}[{vname}].rule_out", m) for m in _as_list(raw.get("rule_out"))
        )
        variants.append(
            Variant(
                name=vname,
                require=require,
                base=_confidence(f"{where}[{vname}]", "base", raw.get("base", base)),
                rule_out=variant_rule_out,
            )
        )
    for text_field in ("title", "explanation"):
        if not isinstance(data[text_field], str) or not data[text_field].strip():
            raise SignatureError(f"{where}: {text_field} must be a non-empty string")
    priority = data.get("priority", 50)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise SignatureError(f"{where}: priority must be an integer, not {priority!r}")
    return Signature(
        id=sig_id,
        title=str(data["title"]),
        severity=severity,
        scope=scope,
        explanation=" ".join(str(data["explanation"]).split()),
        remediation=tuple(str(r) for r in _as_list(data["remediation"])),
        variants=tuple(variants),
        support=tuple(_matcher(f"{where}.support", m) for m in _as_list(data.get("support"))),
        rule_out=tuple(_matcher(f"{where}.rule_out", m) for m in _as_list(data.get("rule_out"))),
        explains=tuple(_matcher(f"{where}.explains", m) for m in _as_list(data.get("explains"))),
        priority=priority,
        tags=tuple(str(t) for t in _as_list(data.get("tags"))),
        explains_signatures=tuple(str(i) for i in _as_list(data.get("explains_signatures"))),
        explained_by=tuple(str(i) for i in _as_list(data.get("explained_by"))),
        phrases=_phrases(where, data.get("text")),
    )


def load_text_weights(path: Path = TEXT_WEIGHTS_FILE) -> dict[str, dict[str, float]]:
    """The fitted text-tier weights, {signature id: {phrase: weight}}; empty when the file is absent.

    A damaged file is logged and ignored: the priors in the signature files still work.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        logger.warning("text-tier weights %s not loaded: %s", path.name, exc)
        return {}
    out: dict[str, dict[str, float]] = {}
    for sig_id, table in data.items():
        if not isinstance(table, Mapping):
            continue
        weights = {}
        for phrase, weight in table.items():
            if isinstance(weight, int | float) and not isinstance(weight, bool) and 0.0 < weight < 1.0:
                weights[normalise_phrase(phrase)] = float(weight)
        out[str(sig_id)] = weights
    return out


def _with_fitted(signature: Signature, fitted: Mapping[str, float]) -> Signature:
    """The signature with its phrase priors replaced by the fitted weights where there is one."""
    if not signature.phrases or not fitted:
        return signature
    phrases = tuple((p, fitted.get(p, w)) for p, w in signature.phrases)
    return replace(signature, phrases=phrases)


def load_catalog(paths: Iterable[Path] | None = None) -> Catalog:
    """Load every `*.toml` signature (default: this folder); a broken file becomes a problem, not a crash."""
    if paths is None:
        return _bundled_catalog()
    return _load_files(sorted(paths), fitted={})


@functools.cache
def _bundled_catalog() -> Catalog:
    """The bundled signatures with their fitted phrase weights, read once per process.

    The CLI, the engine and the text tier's phrasebook all start from it; parsing the 55 TOML files a second
    time cost about a quarter of a second of every `gpuobs diagnose`."""
    return _load_files(sorted(CATALOG_DIR.glob("*.toml")), fitted=load_text_weights())


def _load_files(files: list[Path], fitted: Mapping[str, Mapping[str, float]]) -> Catalog:
    files = [f for f in files if not f.name.startswith("_")]
    signatures: list[Signature] = []
    problems: list[str] = []
    seen: set[str] = set()
    for path in files:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            signature = parse_signature(data, where=path.name)
            if signature.id != path.stem:
                raise SignatureError(f"{path.name}: id {signature.id!r} differs from the file name")
            if signature.id in seen:
                raise SignatureError(f"{path.name}: duplicate id {signature.id!r}")
        except (
            OSError,
            UnicodeDecodeError,
            tomllib.TOMLDecodeError,
            SignatureError,
            TypeError,
            ValueError,
        ) as exc:
            logger.warning("catalog entry %s not loaded: %s", path.name, exc)
            problems.append(f"[{path.stem}] {exc}")
            continue
        seen.add(signature.id)
        signatures.append(_with_fitted(signature, fitted.get(signature.id, {})))
    return Catalog(signatures=tuple(signatures), problems=tuple(problems))


def catalog_with_overrides(folder: Path) -> Catalog:
    """The bundled catalog plus a site's own signatures (`folder/*.toml`); the same id replaces ours."""
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder of signature TOML files")
    base, extra = load_catalog(), load_catalog(folder.glob("*.toml"))
    merged = {s.id: s for s in base.signatures} | {s.id: s for s in extra.signatures}
    return Catalog(signatures=tuple(merged.values()), problems=base.problems + extra.problems)
