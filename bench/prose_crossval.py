"""Leave-one-repository-out over the prose tier alone: does it name the right cause of what it reads?

The prose tier reads only a text in which no parser read a fact and the text tier recognised nothing (most
often a person's own description of the failure). For each source repository of the tune split this refits
the prose model and its score limit (`bench/fit_prose_tier.py`) without that repository's documents and asks
it about that repository's such texts: an incident's is named right, named wrong or left quiet; a healthy
one must stay quiet. It is the fit's own measure (minutes, not the half hour of `bench/rca_crossval.py`),
used to choose the fit's settings; it never reads a held-out batch. Each quiet incident is counted with its
reason: `none` on top, the top signature (right or wrong) under its limit, or too short a lead.

    python bench/prose_crossval.py [--alpha A] [--min-df N] [--min-lead L] [--no-incident-logs]
                                   [--one-limit] [--floor F] [--no-lead-limit] [--no-agree]
                                   [--agree-floor F] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import fit_prose_tier as fit

from gpuobs.rca.prose import ProseModel

SYNTHETIC = fit.ROOT / "tests" / "rca" / "incidents"


def crossval() -> dict[str, int]:
    """Counts over the tune split's prose-only texts, each judged by a model fitted without its repository."""
    docs = [*fit.corpus_docs([fit.TUNE, SYNTHETIC]), *fit.prior_docs()]
    tune = [d for d in docs if d.kind == "log" and d.case and fit.TUNE.name in d.case.split("/")]
    counts = dict.fromkeys(
        (
            "incidents",
            "right",
            "wrong",
            "quiet",
            "quiet_none_on_top",
            "quiet_right_under_limit",
            "quiet_wrong_under_limit",
            "quiet_short_lead",
            "healthy",
            "healthy_named",
        ),
        0,
    )
    for repo in sorted({d.group for d in tune}):
        model = fit.fit([d for d in docs if d.group != repo])
        for doc in (d for d in tune if d.group == repo):
            top, score, lead, named = model.judge(doc.tokens)
            if doc.label == fit.NONE:
                counts["healthy"] += 1
                counts["healthy_named"] += named
            else:
                counts["incidents"] += 1
                counts["quiet" if not named else "right" if top == doc.label else "wrong"] += 1
                if not named:
                    counts[_why_quiet(model, doc.label, top, score, lead)] += 1
    return counts


def _why_quiet(model: ProseModel, label: str, top: str, score: float, lead: float) -> str:
    """Why the tier said nothing on an incident: `none` scored highest, the top signature (right or wrong)
    stayed under its limit, or it led the runner-up by too little."""
    if top == fit.NONE:
        return "quiet_none_on_top"
    if lead < model.min_lead:
        return "quiet_short_lead"
    return "quiet_right_under_limit" if top == label else "quiet_wrong_under_limit"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--alpha", type=float, default=fit.ALPHA, help="Laplace smoothing")
    parser.add_argument("--min-df", type=int, default=fit.MIN_DF, help="documents a token needs")
    parser.add_argument("--min-lead", type=float, default=fit.MIN_LEAD, help="log-odds lead to name a cause")
    parser.add_argument(
        "--no-incident-logs", action="store_true", help="do not train on incidents' prose-only texts"
    )
    parser.add_argument(
        "--one-limit", action="store_true", help="one score limit for every signature, not one per signature"
    )
    parser.add_argument("--floor", type=float, default=fit.LIMIT_FLOOR, help="the lowest score limit")
    parser.add_argument(
        "--no-lead-limit", action="store_true", help="no verdict under the score limit, whatever the lead"
    )
    parser.add_argument(
        "--no-agree", action="store_true", help="no verdict from the two readers' agreement under the limit"
    )
    parser.add_argument("--agree-floor", type=float, default=fit.AGREE_FLOOR, help="the lowest agreed score")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    if args.alpha <= 0 or args.min_df < 1 or args.min_lead < 0:
        parser.error("--alpha must be > 0, --min-df >= 1, --min-lead >= 0")
    fit.ALPHA, fit.MIN_DF, fit.MIN_LEAD = args.alpha, args.min_df, args.min_lead
    fit.TRAIN_INCIDENT_LOGS = not args.no_incident_logs
    fit.CLASS_LIMITS, fit.LIMIT_FLOOR = not args.one_limit, args.floor
    fit.LEAD_LIMIT = not args.no_lead_limit
    fit.AGREE, fit.AGREE_FLOOR = not args.no_agree, args.agree_floor
    t0 = time.perf_counter()
    counts = crossval()
    settings = {
        "alpha": args.alpha,
        "min_df": args.min_df,
        "min_lead": args.min_lead,
        "incident_logs": fit.TRAIN_INCIDENT_LOGS,
        "limits": "one" if args.one_limit else f"per signature, floor {args.floor}",
        "lead_limit": fit.LEAD_LIMIT,
        "agree": f"floor {fit.AGREE_FLOOR}" if fit.AGREE else False,
    }
    if args.json:
        print(json.dumps(settings | counts | {"seconds": round(time.perf_counter() - t0, 1)}))
    else:
        print(
            f"prose tier, leave one repository out ({settings}): {counts['incidents']} prose-only incidents: "
            f"{counts['right']} right, {counts['wrong']} wrong, {counts['quiet']} quiet ("
            f"{counts['quiet_none_on_top']} with none on top, {counts['quiet_right_under_limit']} right and "
            f"{counts['quiet_wrong_under_limit']} wrong under the limit, {counts['quiet_short_lead']} short "
            "lead); "
            f"{counts['healthy']} healthy: {counts['healthy_named']} named "
            f"({time.perf_counter() - t0:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
