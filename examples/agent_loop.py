"""An agent loop: one Selector, one select per turn, with state, printing the prompt it would send.

    python examples/agent_loop.py

The memories are an agent's own (made up here; in a runtime they come from its store). Each turn
adds what the turn produced, asks memsolve for the context under a token budget, and builds the
prompt from the chosen texts. The state file keeps the MemPrice queue and the fidelity ceilings
between turns: within a task a record dropped once stays out; a new task starts with
``refresh=True``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import memsolve

POLICY = """
apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {name: support-agent}
tenant: acme
budget: {tokens: 60, max_records: 4}
rules:
  - freshness: {default_ttl: 48h, ttl_by_store: {working: 2h}}
  - latest_key: {}
  - relevance: {recency_weight: 0.2, half_life: 24h}
utility: {from: relevance, temperature: 0.1, retention: {raw: 1.0, summary: 0.6}}
tokens: {counter: words}
solver: {engine: dp, cross_check: none}
"""

MEMORIES = [
    {"id": "plan", "tenant": "acme", "timestamp": "2026-11-30T08:00:00Z", "store": "semantic", "key": "plan",
     "representations": {"raw": {"text": "Customer acme is on the Team plan with 25 seats, renewal on 2027-01-15."},
                         "summary": {"text": "Team plan, 25 seats."}}},
    {"id": "sso", "tenant": "acme", "timestamp": "2026-11-30T09:30:00Z", "store": "episodic",
     "text": "SSO login failed for three users after the identity provider rotated its certificate."},
    {"id": "scratch", "tenant": "acme", "timestamp": "2026-11-30T09:55:00Z", "store": "working",
     "text": "Asked the customer for a HAR file of the failed SSO login."},
    {"id": "other", "tenant": "globex", "timestamp": "2026-11-30T09:00:00Z", "store": "episodic",
     "text": "Globex SSO certificate details (another tenant: never shown to acme's agent)."},
]

TURNS = [
    ("2026-11-30T10:00:00Z", "Why can't users log in with SSO?", []),
    ("2026-11-30T11:30:00Z", "The customer sent the HAR file; what do we know about the SSO failure?",
     [{"id": "har", "tenant": "acme", "timestamp": "2026-11-30T11:20:00Z", "store": "episodic",
       "text": "HAR file shows the SAML response signed with the old SSO certificate."}]),
    ("2026-11-30T13:00:00Z", "How many seats does acme have before the renewal?",
     [{"id": "plan-v2", "tenant": "acme", "timestamp": "2026-11-30T12:45:00Z", "store": "semantic", "key": "plan",
       "representations": {"raw": {"text": "Customer acme upgraded to 40 seats on the Team plan today."},
                           "summary": {"text": "Team plan, 40 seats."}}}]),
]


def main() -> None:
    policy = memsolve.policy_from_text(POLICY, "support-agent.yaml")
    with tempfile.TemporaryDirectory() as folder:
        selector = memsolve.Selector(policy, MEMORIES, state=Path(folder) / "memsolve.db", agent="support")
        for turn, (now, question, produced) in enumerate(TURNS, start=1):
            selector.add(produced)
            new_task = turn == 3  # a different question: the seats, not the SSO incident
            result = selector.select(query=question, now=now, trace="none", refresh=new_task)
            context = "\n".join(f"- [{c.id}, {c.level}] {c.text}" for c in result.selected)
            print(f"--- turn {turn} (round {result.round}, price {result.price.lam:.3g}, "
                  f"{result.tokens_used}/{result.budget} tokens, {result.other_tenants} other tenant's records)")
            print(f"Memory:\n{context}\n\nUser: {question}\n")
            for left_out in result.excluded:
                print(f"  (left out {left_out.id}: {left_out.rule}: {left_out.reason})")


if __name__ == "__main__":
    main()
