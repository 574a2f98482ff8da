"""The rounds half: what carries from one round to the next.

The state store (pricing queue, fidelity ceilings, history) and simulated conversations that
run many rounds through it; one :class:`~memsolve.rounds.state.RoundRow` per round for both.
"""
