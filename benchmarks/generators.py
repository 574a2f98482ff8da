"""Instance generators: memory-shaped, and Pisinger's classic multiple-choice knapsack classes.

Each returns (tokens int (n, k), utility float (n, k), budget), levels highest fidelity first.
"""

from __future__ import annotations

import numpy as np


def memory(n: int, seed: int):
    """5 levels: raw, summary ≈ 25 % of raw, abstraction ≈ 8 %, keywords ≈ 2 %, delete;
    utilities falling with fidelity; budget 25 % of all raw tokens."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(50, 2000, size=n)
    tokens = np.stack([raw, np.maximum(raw // 4, 1), np.maximum(raw * 8 // 100, 1), np.maximum(raw // 50, 1)], 1)
    u = rng.uniform(1, 100, size=n)
    utility = np.stack([u, u * rng.uniform(0.5, 0.8, n), u * rng.uniform(0.25, 0.45, n),
                        u * rng.uniform(0.05, 0.15, n)], 1)
    return tokens, utility, int(raw.sum() // 4)


def _pisinger(n: int, seed: int, profit, k: int = 5, r: int = 1000):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, r + 1, size=(n, k))
    utility = np.maximum(profit(rng, tokens, r), 1).astype(float)
    budget = int((tokens.min(axis=1).sum() + tokens.max(axis=1).sum()) // 2)
    return tokens, utility, budget


def uncorrelated(n: int, seed: int):
    return _pisinger(n, seed, lambda rng, w, r: rng.integers(1, r + 1, size=w.shape))


def weakly(n: int, seed: int):
    return _pisinger(n, seed, lambda rng, w, r: w + rng.integers(-10, 11, size=w.shape))


def strongly(n: int, seed: int):
    return _pisinger(n, seed, lambda rng, w, r: w + 10)


def subset_sum(n: int, seed: int):
    return _pisinger(n, seed, lambda rng, w, r: w)


def noisy(n: int, seed: int):
    """Strongly correlated with float noise: utility = tokens + 10 + N(0, 1), as from a calibrated model
    where the length is a feature (no two levels tied, unlike the integer classes)."""
    return _pisinger(n, seed, lambda rng, w, r: w + 10 + rng.normal(0.0, 1.0, size=w.shape))


CLASSES = {
    "memory": memory,
    "uncorrelated": uncorrelated,
    "weakly": weakly,
    "strongly": strongly,
    "subset-sum": subset_sum,
    "noisy": noisy,
}


def generate(kind: str, n: int, seed: int = 1):
    return CLASSES[kind](n, seed)
