"""Optional plots (matplotlib, the ``plot`` extra): the value frontier and a MemPrice trajectory.

Files are written atomically and never silently replaced (:mod:`memsolve.output`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .errors import InputError, Location
from .output import write_atomic


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'memsolve[plot]'") from None
    return plt


def plt_rc(params: dict):
    import matplotlib

    return matplotlib.rc_context(params)


def save_figure(fig, path: str, force: bool) -> None:
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".svg", ".png", ".pdf"):
        raise InputError("plot file must end in .svg, .png or .pdf", Location(path))
    # fixed salt and metadata keep the file byte-identical between runs
    metadata = {"Date": None} if suffix == ".svg" else {"CreationDate": None} if suffix == ".pdf" else {}

    def write(tmp: str) -> None:
        with plt_rc({"svg.hashsalt": "memsolve"}):
            fig.savefig(tmp, format=suffix[1:], metadata=metadata)

    write_atomic(target, write, force=force, suffix=suffix)


def plot_frontier(points: Sequence[tuple[int, float]], path: str, *, force: bool = False, title: str = "") -> None:
    """Draw the value frontier as a step curve."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    budgets = [b for b, _ in points]
    values = [v for _, v in points]
    ax.step(budgets, values, where="post", color="tab:blue")
    ax.plot(budgets, values, "o", color="tab:blue")
    ax.set_xlabel("token budget")
    ax.set_ylabel("best objective")
    ax.set_title(f"Value frontier {title}".strip())
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    try:
        save_figure(fig, path, force)
    finally:
        plt.close(fig)


def plot_trajectory(rows, alpha: float, path: str, *, force: bool = False, title: str = "") -> None:
    """Occupancy G_t/B against the target alpha, and the price lambda_t, over rounds."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    rounds = [r.round for r in rows]
    top.plot(rounds, [r.occupancy for r in rows], marker="o", markersize=3, label="occupancy G/B")
    top.axhline(alpha, color="tab:red", linestyle="--", label=f"alpha = {alpha:g}")
    top.axhline(1.0, color="grey", linestyle=":", label="hard budget")
    top.set_ylabel("occupancy")
    top.set_ylim(0, 1.1)
    top.legend(loc="lower right")
    top.grid(True, alpha=0.3)
    bottom.plot(rounds, [r.lam for r in rows], color="tab:green", marker="o", markersize=3)
    bottom.set_ylabel("lambda (price)")
    bottom.set_xlabel("round t")
    bottom.grid(True, alpha=0.3)
    fig.suptitle(f"MemPrice trajectory {title}".strip())
    fig.tight_layout()
    try:
        save_figure(fig, path, force)
    finally:
        plt.close(fig)
