"""PromQL building blocks shared by panels and rules: selectors, zero fallbacks, new events, label maps.

Metric names come in as `MetricSpec`s from gpuobs.names; this module only knows PromQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpuobs.names.spec import MetricSpec

__all__ = [
    "ALERTS",
    "UP",
    "label_map",
    "matchers",
    "new_or_increased",
    "or_zero",
    "regex_union",
    "series",
]

UP = "up"
"""Prometheus's own scrape-health series (not a gpuobs metric)."""
ALERTS = "ALERTS"
"""Prometheus's own series of pending and firing alerts (not a gpuobs metric)."""


def matchers(**labels: str) -> str:
    """`{a="x",b=~"y"}` from keyword arguments; a value starting with `~` or `!` picks =~ or !=/!~."""
    parts = []
    for name, value in labels.items():
        if value.startswith("!~"):
            parts.append(f'{name}!~"{value[2:]}"')
        elif value.startswith("!"):
            parts.append(f'{name}!="{value[1:]}"')
        elif value.startswith("~"):
            parts.append(f'{name}=~"{value[1:]}"')
        else:
            parts.append(f'{name}="{value}"')
    return "{" + ",".join(parts) + "}" if parts else ""


def series(spec: MetricSpec | str, selector: str = "", suffix: str = "") -> str:
    """The exposed series name of a spec (counters gain `_total`, `suffix` adds `_bucket`...) + selector."""
    if isinstance(spec, str):
        return f"{spec}{suffix}{selector}"
    name = spec.native if suffix else spec.exposed_native
    return f"{name}{suffix}{selector}"


def or_zero(expr: str) -> str:
    """`expr`, or a single 0 when it has no series: an event count shows 0 on a healthy fleet, not No data."""
    return f"({expr}) or on() vector(0)"


def regex_union(values: Iterable[object]) -> str:
    """An anchored-by-Prometheus alternation of literal values (`13|31|48`)."""
    return "|".join(str(v) for v in values)


def new_or_increased(counter: str, window: str, created_gate: str) -> str:
    """Series of `counter` (a selector) that counted an event within `window`.

    `increase()` misses a counter series that is created at 1 by its first event (there is no earlier
    sample at 0), so a series that did not exist `window` ago also counts, but only where `created_gate`
    (a vector on the same `on (...)` labels, written as `and on (...) (...)`) shows that the event is
    recent rather than a Prometheus restart that lost the history.
    """
    increased = f"sum without () (increase({counter}[{window}]) > 0)"
    created = f"sum without () ({counter} unless {counter} offset {window})"
    return f"(\n  {increased}\n  or\n  ({created}\n   {created_gate})\n)"


def label_map(
    expr: str, target: str, source: str, table: Mapping[str, Iterable[object]], default: str
) -> str:
    """Set label `target` from label `source` by a table {target value: source values}; `default` when
    no row matches. label_replace leaves a series unchanged when its regex does not match."""
    rows = [f'"{target}", "{value}", "{source}", "{regex_union(codes)}")' for value, codes in table.items()]
    rows.append(f'"{target}", "{default}", "{target}", "")')
    return "label_replace(" * len(rows) + "\n  " + expr.replace("\n", "\n  ") + ",\n  " + ",\n  ".join(rows)
