"""`gpuobs dashboards`: generate the Grafana dashboards, Prometheus rules and alerting provisioning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from gpuobs.cli.render import console, emit_json, emit_table
from gpuobs.config import config_path, load_config, resolve
from gpuobs.errors import InputError

if TYPE_CHECKING:
    from gpuobs.dashboards.options import Options

__all__ = ["register"]

group = typer.Typer(
    name="dashboards",
    no_args_is_help=True,
    help="Grafana dashboards and alerting as code: dashboards, Prometheus rules, Grafana-managed alerts.",
)

_BUILD_HELP = "\n\n".join(
    [
        "Write the gpuobs Grafana dashboards (OUT_DIR/*.json, for Grafana's file provider), the Prometheus "
        "recording and alert rules (OUT_DIR/rules/*.yml), and Grafana alerting provisioning (OUT_DIR/"
        "grafana-alerting/*.yml: the same alerts as Grafana-managed rules, a contact point, a notification "
        "policy). With --k8s DIR also a PrometheusRule, dashboard ConfigMaps for Grafana's sidecar and a "
        "kustomization in DIR.",
        "Settings: flag > GPUOBS_<NAME> environment > the dashboards table of the config file.",
        "Example: gpuobs dashboards build ./out --k8s deploy/monitoring --runbook-base-url "
        "https://git.example.com/gpuobs/blob/main/docs/runbooks",
        "Exit codes: 0 written, 2 bad OUT_DIR or setting, 74 a file could not be written (a full disk); "
        "then no file there was changed.",
    ]
)


# What a deployment sets, by flag, GPUOBS_<NAME> or the [dashboards] table (Options' other fields: tests).
_SETTINGS = (
    "exporter_job",
    "serving_job",
    "runbook_base_url",
    "grafana_datasource_uid",
    "alertmanager_url",
    "namespace",
)


def _options(**flags: Any) -> Options:
    from gpuobs.dashboards.options import Options

    cfg = load_config()
    defaults = Options()
    table = cfg.get("dashboards", {})
    for key in table if isinstance(table, dict) else ():
        if str(key).replace("-", "_") not in _SETTINGS:  # a typo must not silently leave the default in place
            known = ", ".join(s.replace("_", "-") for s in _SETTINGS)
            raise InputError(f"unknown setting {key!r} in [dashboards] of {config_path()} (known: {known})")

    def r(name: str, cast: Callable[[Any], Any]) -> Any:
        return resolve("dashboards", name, flags.get(name), getattr(defaults, name), cast, cfg)

    return Options(**{name: r(name, str) for name in _SETTINGS})


@group.command("build", help=_BUILD_HELP)
def build_cmd(
    out_dir: str = typer.Argument(
        ..., metavar="OUT_DIR", help="Directory to write into (created if missing)."
    ),
    k8s: Path | None = typer.Option(
        None, "--k8s", help="Also write Kubernetes manifests into this directory."
    ),
    exporter_job: str | None = typer.Option(
        None, "--exporter-job", help="Job label of the GPU exporter targets [default: gpuobs-exporter]."
    ),
    serving_job: str | None = typer.Option(
        None, "--serving-job", help="Job label of the serving targets [default: gpuobs-serve]."
    ),
    runbook_base_url: str | None = typer.Option(
        None, "--runbook-base-url", help="Where docs/runbooks is published; runbook_url = BASE/<alert>.md."
    ),
    grafana_datasource_uid: str | None = typer.Option(
        None,
        "--grafana-datasource-uid",
        help="UID of the Prometheus data source Grafana-managed rules query [default: prometheus].",
    ),
    alertmanager_url: str | None = typer.Option(
        None,
        "--alertmanager-url",
        help="Alertmanager of the Grafana contact point [default: http://alertmanager:9093].",
    ),
    namespace: str | None = typer.Option(
        None, "--namespace", help="Namespace of the Kubernetes manifests [default: gpuobs]."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace files in the way that a build did not write, or edited after it (kept otherwise).",
    ),
) -> None:
    from gpuobs.dashboards.build import build

    options = _options(
        exporter_job=exporter_job,
        serving_job=serving_job,
        runbook_base_url=runbook_base_url,
        grafana_datasource_uid=grafana_datasource_uid,
        alertmanager_url=alertmanager_url,
        namespace=namespace,
    )
    if not out_dir.strip():  # typer would read '' as '.', writing nine files where the user stands
        raise InputError("OUT_DIR is empty: name the folder to write into ('.' for this one)")
    result = build(Path(out_dir), options, k8s, force=force)
    if json_out:
        emit_json(result.to_dict())
        return
    rows = []
    for f in result.files:
        what = (
            f.detail.get("title")
            or ", ".join(f"{v} {k}" for k, v in f.detail.items() if isinstance(v, int))
            or ", ".join(f.detail.get("objects", []))
        )
        rows.append({"file": str(f.path), "kind": f.kind, "holds": what})
    emit_table(f"gpuobs dashboards build: {len(result.files)} files", ["file", "kind", "holds"], rows)
    console.print(
        f"Load {result.out_dir}/rules/*.yml into Prometheus and point Grafana's dashboard provider "
        f"at {result.out_dir}.",
        highlight=False,
    )


@group.command("alerts")
def alerts_cmd(json_out: bool = typer.Option(False, "--json", help="Print the table as JSON.")) -> None:
    """List the alert rules: severity, the RCA signature each points to, `for`, runbook.

    Example: gpuobs dashboards alerts --json
    """
    from gpuobs.dashboards.rules.alerts import alert_rules

    options = _options()
    rows = [
        {
            "alert": rule.name,
            "group": rule.group,
            "severity": ", ".join(rule.all_severities),
            "signature": ", ".join(rule.all_signatures),
            "for": rule.effective_for(options),
            "runbook": options.runbook_url(rule.name),
        }
        for rule in alert_rules(options)
    ]
    if json_out:
        emit_json(rows)
    else:
        emit_table("gpuobs alert rules", ["alert", "severity", "signature", "for", "runbook"], rows)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="dashboards")
