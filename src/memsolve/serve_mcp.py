"""A Model Context Protocol server: an agent asks memsolve for its context each turn (DESIGN §12).

    memsolve mcp --policy policies/p.yaml --records memories.jsonl --state memsolve.db --agent planner

Tools (one decorated function each; the docstrings are what the model reads):

- ``select_context(query, budget?, session?, now?)``: the records to put in the context, with
  ids, levels, tokens, utilities and texts, and the price per token; with state, one round.
- ``explain(id)``: why a record got its outcome, and what would change it, for the context of
  the last ``select_context`` (rerun without state: explaining is no round).

Everything goes through :class:`memsolve.Selector`, so the answers are the library's and the
CLI's; a tenant's answers describe only that tenant (DESIGN §9): other tenants' records are
counted, never named, and an id of another tenant is explained exactly as one that does not
exist. Input errors come back as tool errors (the model reads one line), never as crashes.
Needs the ``mcp`` extra (the ``mcp`` package, 2.x: ``mcp.server.mcpserver.MCPServer``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .context import Context
from .errors import InputError, MemsolveError
from .policies.model import Policy
from .result import Result
from .selector import Selector

INSTRUCTIONS = (
    "memsolve chooses which of this agent's memories enter the context window, under a token budget and "
    "the governance rules of its policy. Call select_context once per turn with the user's request as the "
    "query and put the returned texts in the prompt; call explain with a record id to learn why it was "
    "left out and what would bring it in."
)


@dataclass
class Session:
    """What the server keeps between calls: the selector and the last turn's context and result."""

    selector: Selector
    last_context: Context | None = None
    last_policy: Policy | None = field(default=None, repr=False)
    last_result: Result | None = field(default=None, repr=False)

    def select(self, query: str, budget: int | None, session: str | None, now: float | str | None) -> dict[str, Any]:
        selector = self._within(budget)
        result = selector.select(query=query, now=now, session=session, trace="none")
        self.last_context = Context(now=now if now is not None else result.now, session=session, query=query)
        self.last_policy, self.last_result = selector.policy, result
        return answer(result)

    def _within(self, budget: int | None) -> Selector:
        """The selector for a turn's budget: the policy's budget is the cap a turn may lower, never raise."""
        policy = self.selector.policy
        cap = policy.budget.tokens
        if budget is None or budget == cap:
            return self.selector
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise InputError(f"budget `{budget}` is not a token count")
        if cap is not None and budget > cap:
            raise InputError(f"budget `{budget}` is more than the policy's {cap} tokens; a turn may ask for less, "
                             "never more")
        narrowed = replace(policy, budget=replace(policy.budget, tokens=budget))
        turn = Selector(narrowed, self.selector.records, state=self.selector.store, agent=self.selector.agent)
        turn.prompt_orders = self.selector.prompt_orders  # one memory of the last prompt order, whatever the budget
        return turn

    def explain(self, record_id: str) -> dict[str, Any]:
        from .ci.explain import explain as explain_record

        if self.last_context is None or self.last_policy is None:
            raise InputError("nothing to explain yet: call select_context first")
        explanation = explain_record(self.last_policy, self.selector.records, record_id, self.last_context).to_dict()
        explanation["last_turn"] = _last_outcome(self.last_result, record_id)
        return explanation


def answer(result: Result) -> dict[str, Any]:
    """A turn's answer: the selected records (in input order), their prompt order, and what the
    selection cost."""
    return {
        "round": result.round,
        "selected": [chosen.to_dict() for chosen in result.selected],
        "prompt_order": list(result.prompt_order),  # DESIGN §15: put the texts in the prompt in this order
        "tokens_used": result.tokens_used,
        "budget": result.budget,
        "price": result.price.to_dict(),
        "objective": result.objective,
        "dropped": [dropped.id for dropped in result.dropped],
        "excluded": [{"id": excluded.id, "rule": excluded.rule} for excluded in result.excluded],
        "other_tenants": result.other_tenants,
    }


def _last_outcome(result: Result | None, record_id: str) -> dict[str, Any] | None:
    """The record's outcome in the last select_context (which ran with state, when there is one)."""
    if result is None:
        return None
    for chosen in result.selected:
        if chosen.id == record_id:
            return {"outcome": "selected", "level": chosen.level}
    for dropped in result.dropped:
        if dropped.id == record_id:
            return {"outcome": "dropped", "reason": dropped.reason}
    for excluded in result.excluded:
        if excluded.id == record_id:
            return {"outcome": "excluded", "rule": excluded.rule, "reason": excluded.reason}
    return None


def build_server(selector: Selector) -> MCPServer:
    """The MCP server over ``selector`` (run it with ``server.run("stdio")``)."""
    held = Session(selector)
    server = MCPServer("memsolve", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")

    @server.tool()
    def select_context(query: str, budget: int | None = None, session: str | None = None,
                       now: float | str | None = None) -> dict[str, Any]:
        """Choose the memories to put in the context for this turn.

        Args:
            query: what the turn is about (the user's request); relevance is scored against it.
            budget: token budget for the memories this turn; default, and most: the policy's.
            session: the current conversation's id (for policies that keep earlier sessions out).
            now: the current time (RFC 3339, or a number for records timed in plain numbers); default: now.

        Returns the selected records (id, level, tokens, utility, text) in input order, their ids in
        prompt order (put the texts in the prompt in that order: it keeps the prompt cache's prefix),
        the tokens used, the price per token, and the ids left out with their rule.
        """
        return _tool(held.select, query, budget, session, now)

    @server.tool()
    def explain(id: str) -> dict[str, Any]:  # noqa: A002 - the tool's parameter is named as DESIGN §12 names it
        """Why a record got its outcome in the last select_context, and what would change it.

        Args:
            id: the record's id, as select_context returned it.

        Returns every rule's verdict on the record, its outcome in the last turn, and the
        utility increase or budget that would bring it in.
        """
        return _tool(held.explain, id)

    return server


def _tool(call: Any, *args: Any) -> dict[str, Any]:
    try:
        return call(*args)
    except MemsolveError as error:  # one line for the model; memsolve's messages are tenant-safe (§9)
        message = error.message if isinstance(error, InputError) else str(error)
        raise ToolError(message) from None


def _version() -> str:
    from importlib.metadata import version

    return version("memsolve")
