"""The per-turn path: a :class:`Selector` holds a policy and a record set between an agent's turns.

    sel = memsolve.Selector(policy, records, state="memsolve.db", agent="planner")
    result = sel.select(query="why did the deploy fail", now=..., session="s-42", budget=800)
    prompt = "\\n".join(item.text for item in result.selected if item.text)

Each :meth:`Selector.select` runs the same pipeline as :func:`memsolve.solve` and the CLI; with a
state store it is one round (pricing queue, fidelity ceilings) exactly as ``--state``. The
policy and the validated records are kept between turns, with what is derived from them once:
the record columns, the level table (tokens counted), each tenant's view, the masks that do not
depend on the moment, the latest record per key and the relevance term index. :meth:`add`
validates only the new records and extends the columns and level tables by them; :meth:`remove`
drops records by id and keeps the columns of the rest. After either, what a rule derived over all
records (masks, the latest per key, the term index) is derived again on the next turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import pipeline
from .cache import PromptOrder, order_of
from .context import Context
from .errors import InputError, shown
from .policies.load import load_policy
from .policies.model import Policy
from .records import RecordSet, load_records
from .result import Result
from .rounds.state import StateStore


class Selector:
    """A policy and its records, ready for one :meth:`select` per turn.

    ``policy``: a :class:`Policy` or a policy file; ``records``: a :class:`RecordSet`, a records
    file, or a list of record mappings; ``state``: a :class:`StateStore` or a state file, which
    makes every select one round for ``agent``.
    """

    def __init__(
        self,
        policy: Policy | str | Path,
        records: RecordSet | str | Path | Sequence[Mapping[str, Any]] = (),
        state: StateStore | str | Path | None = None,
        agent: str | None = None,
    ) -> None:
        self.policy = policy if isinstance(policy, Policy) else load_policy(policy)
        self._records = records if isinstance(records, RecordSet) else load_records(
            records if isinstance(records, (str, Path, Mapping)) else list(records)  # a mapping: a case object
        )
        if (state is None) != (agent is None):
            raise InputError("a Selector with state needs an agent, and an agent needs state")
        self.store = state if isinstance(state, StateStore) or state is None else StateStore(state)
        self.agent = agent
        # DESIGN §15: each tenant's last prompt order (this Selector serves one agent), kept in memory
        self.prompt_orders: dict[str | None, PromptOrder] = {}

    @property
    def records(self) -> RecordSet:
        """The record set the next select sees."""
        return self._records

    def add(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Validate ``records`` (mappings as in a records file) and append them; the records held
        are not validated again. A problem with one is that record's (kept as invalid, as on
        load), and so is a duplicate of a record already held (identity is (tenant, id))."""
        if isinstance(records, (Mapping, str, bytes)):  # its keys or characters would be taken for records
            raise InputError(f"add takes a list of records, got {type(records).__name__}: add([record])")
        self._records = self._records.extended(load_records(list(records)))

    def remove(self, ids: Iterable[str], tenant: str | None = None) -> int:
        """Drop ``tenant``'s records with these ids (the policy's tenant when none is given; every
        record with such an id only when neither names one); returns how many went."""
        if isinstance(ids, (str, bytes)):  # its characters would be taken for ids
            raise InputError(f"remove takes a list of ids, got one string (`{shown(ids)}`): remove([id])")
        tenant = tenant if tenant is not None else self.policy.tenant
        gone = set(ids)
        keep = [not (r.id in gone and (tenant is None or r.tenant == tenant)) for r in self._records.records]
        removed = keep.count(False)
        if removed:
            digest = hashlib.sha256(f"{self._records.sha256}-{sorted(gone)}".encode()).hexdigest()
            self._records = self._records.without(keep, digest)
        return removed

    def select(
        self,
        query: str | None = None,
        now: Any = None,
        session: str | None = None,
        budget: int | None = None,
        *,
        tenant: str | None = None,
        trace: str = "excluded",
        refresh: bool = False,
        engine: str | None = None,
    ) -> Result:
        """One turn: the records to put in the context, at which level, with their text.

        ``trace`` chooses how much of the trace the result carries (``full``, ``excluded``,
        ``none``); ``refresh`` (with state) clears the fidelity ceilings for a new task.
        """
        context = Context(now=now, session=session, query=query, budget=budget, tenant=tenant)
        key = tenant if tenant is not None else self.policy.tenant
        previous = self.prompt_orders.get(key)  # a refresh keeps it: the provider's cache is not emptied
        if self.store is None:
            if refresh:
                raise InputError("refresh clears a state's ceilings: this Selector has no state")
            result = pipeline.run(self.policy, self._records, context, engine=engine, trace=trace,
                                  previous=previous).result
        else:
            assert self.agent is not None
            result = self.store.round(self.policy, self._records, context, agent=self.agent, refresh=refresh,
                                      engine=engine, trace=trace, previous=previous)
        self.prompt_orders[key] = order_of(result)  # arrays over this turn's records: nothing hashed
        return result
