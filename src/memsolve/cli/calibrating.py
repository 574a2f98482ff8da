"""``calibrate``: fit the utility model on labelled queries and write the policy with it (DESIGN §11)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InputError, Location
from .common import check_outputs, guarded, write_output


@click.command("calibrate")
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
              help="The policy to calibrate (it needs a `relevance` rule).")
@click.option("--labelled", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="A LabelledQueries file (repeatable); held-out recall is k-fold over these files.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Write the calibrated policy here.")
@click.option("--folds", type=click.IntRange(2, 100), help="Folds over the files (default: one per file, at most 10).")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@guarded
def calibrate(policy_path, labelled, out, folds, force) -> None:
    """Fit the utility model on labelled queries and write the policy with it.

    Every eligible level of every labelled query is one example: its features and whether it
    covers one of the query's relevant ids. The model is a logistic regression on standardised
    features (deterministic: the same inputs write the same bytes); --out is the policy with
    `utility: {from: relevance, model: ...}`, what it was fitted on in `model.fitted`. Recall at
    the budget (the share of relevant ids the selection covers, averaged over queries) of the exact
    engine and greedy, before and after, on the labelled set and on held-out files, goes to
    standard output.
    """
    from ..calibrate import calibrate as fit
    from ..calibrate import load_labelled, policy_text
    from ..policies.load import load_policy

    check_outputs({"--out": out}, [("--policy", policy_path), *(("--labelled", p) for p in labelled)])
    if not force and Path(out).exists():  # before the fit, which takes a while
        raise InputError("exists; pass --force to replace it", Location(out))
    policy = load_policy(policy_path)
    sets = [load_labelled(path) for path in labelled]
    found = fit(policy, sets, folds)
    write_output(policy_text(policy_path, found.model), out, force)
    queries = sum(len(s.queries) for s in sets)
    click.echo(f"calibrated on {queries} queries in {len(sets)} file(s): {found.examples} examples, "
               f"{found.positives} covering a relevant id")
    click.echo("model: " + ", ".join(f"{f} {c:+.4g}" for f, c in zip(found.model.features, found.model.coef,
                                                                     strict=True))
               + f", intercept {found.model.intercept:+.4g}")
    click.echo(f"{'recall@budget':<26} {'exact':>7} {'greedy':>7}")
    rows = [("before (labelled set)", found.before), ("after (labelled set)", found.after)]
    if found.held_out is not None:
        rows.append(("after (held out, k-fold)", found.held_out))
    for name, r in rows:
        click.echo(f"{name:<26} {r.exact:>7.3f} {r.greedy:>7.3f}")
    if found.held_out is None:
        click.echo("held out: needs two or more labelled files (k-fold by file)")
    click.echo(f"wrote {out}")


COMMANDS = (calibrate,)
