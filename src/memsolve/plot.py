"""Optional plots (matplotlib, the `plot` extra). Files are written atomically, never silently replaced."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError, Location


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
    if target.exists() and not force:
        raise InputError("file exists; pass --force to replace it", Location(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        # fixed metadata keeps SVG output byte-identical between runs
        # fixed salt and metadata keep the file byte-identical between runs
        metadata = {"Date": None} if suffix == ".svg" else {"CreationDate": None} if suffix == ".pdf" else {}
        with plt_rc({"svg.hashsalt": "memsolve"}):
            fig.savefig(tmp, format=suffix[1:], metadata=metadata)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


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
