"""MemPrice: the price of a token in this round, and the pressure queue that sets it.

λ_t = c·Q_t/√t is this round's price (per token: λ_t / B); after the round the queue moves
by the occupancy above the target, Q_{t+1} = max(0, Q_t + G_t/B − α).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .policies.model import Policy


@dataclass(frozen=True)
class RoundPrice:
    """This round's MemPrice quantities: t, Q_t, λ_t = c·Q_t/√t."""

    round: int
    queue: float
    lam: float


def price_for(policy: Policy, round_: int = 1, queue: float | None = None) -> RoundPrice:
    """The price of round ``round_`` at queue ``queue`` (the policy's q0 when None)."""
    q = policy.pricing.q0 if queue is None else queue
    return RoundPrice(round_, q, policy.pricing.c * q / math.sqrt(round_))


def next_queue(policy: Policy, queue: float, tokens_used: int, budget: int) -> float:
    """Q_{t+1} = max(0, Q_t + G_t/B − α); with B = 0 the occupancy term is 0."""
    occupancy = tokens_used / budget if budget > 0 else 0.0
    return max(0.0, queue + occupancy - policy.pricing.alpha)
