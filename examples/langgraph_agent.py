"""A LangGraph agent whose memory node asks memsolve for its context every turn.

    pip install 'memsolve[langgraph]'
    python examples/langgraph_agent.py

The memories live in a LangGraph store (an ``InMemoryStore`` here; a Postgres store works the
same). Each turn the graph runs two nodes: ``recall`` reads the tenant's items from the store,
turns them into records (``memsolve.adapters.from_langgraph``) and asks a ``memsolve.Selector``
for the context under the policy's token budget; ``remember`` writes what the turn learned back
into the store. No LLM is called: the example prints the prompt it would send. The state file
makes every turn one round (pricing queue, fidelity ceilings), as ``--state`` does.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

import memsolve
from memsolve import adapters

TENANT = "acme"
POLICY = f"""
apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {{name: langgraph-support}}
tenant: {TENANT}
stores: [memories, notes]
budget: {{tokens: 40, max_records: 4}}
rules:
  - stores: {{allow: [memories, notes]}}
  - freshness: {{default_ttl: null}}
  - latest_key: {{}}
  - relevance: {{recency_weight: 0.2, half_life: 24h}}
utility: {{from: relevance, temperature: 0.1}}
tokens: {{counter: words}}
"""


class Turn(TypedDict, total=False):
    question: str  # the user's message this turn
    learned: dict[str, str]  # what the turn adds to memory: key → text
    context: list[str]  # the memories memsolve chose, as "[id] text"
    prompt: str  # what would go to the model


def build(policy: memsolve.Policy, state_file: Path, agent: str = "support"):
    """The graph: recall (memsolve picks the context) → remember (the store learns)."""

    def recall(turn: Turn, *, store: BaseStore) -> Turn:
        items = store.search((TENANT,), limit=1000)  # the tenant's items; other namespaces are never read
        records = adapters.from_langgraph(items).records
        selector = memsolve.Selector(policy, list(records), state=state_file, agent=agent)
        # the current time to the microsecond: the store stamps items so, and a memory written this
        # very second must not be later than now
        result = selector.select(query=turn["question"], now=datetime.now(timezone.utc).isoformat())
        chosen = [f"[{item.id}] {item.text}" for item in result.selected if item.text]
        prompt = "Known facts:\n" + "\n".join(chosen) + f"\n\nUser: {turn['question']}\nAssistant:"
        return {"context": chosen, "prompt": prompt}

    def remember(turn: Turn, *, store: BaseStore) -> Turn:
        for key, text in turn.get("learned", {}).items():
            store.put((TENANT, "memories"), key, {"text": text})
        return {}

    graph = StateGraph(Turn)
    graph.add_node("recall", recall)
    graph.add_node("remember", remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "remember")
    graph.add_edge("remember", END)
    return graph


def seeded_store() -> InMemoryStore:
    store = InMemoryStore()
    store.put((TENANT, "memories"), "plan", {"text": "Acme is on the Team plan with 25 seats"})
    store.put((TENANT, "memories"), "sso", {"text": "Acme signs in with SAML single sign-on through Okta"})
    store.put((TENANT, "memories"), "contact", {"text": "The billing contact at Acme is Priya"})
    store.put((TENANT, "notes"), "ticket", {"text": "Ticket 4411: SSO login loops back to the sign-in page"})
    store.put(("globex", "memories"), "plan", {"text": "Globex is on the Enterprise plan"})  # another tenant
    return store


TURNS: list[Turn] = [
    {"question": "Why does the SSO login keep looping?"},
    {"question": "How many seats does the plan have?", "learned": {"plan": "Acme upgraded to 40 seats"}},
    {"question": "What plan and how many seats now?"},
]


def main() -> None:
    policy = memsolve.policy_from_text(POLICY, "langgraph-support.yaml")
    with tempfile.TemporaryDirectory() as folder:
        app = build(policy, Path(folder) / "memsolve.db").compile(store=seeded_store())
        for number, turn in enumerate(TURNS, start=1):
            out = app.invoke(turn)
            print(f"--- turn {number}: {turn['question']}")
            print(out["prompt"])


if __name__ == "__main__":
    main()
