"""Typed values a loaded policy is made of.

Durations stay as written (``24`` or ``"24h"``) until a solve knows whether its times are
plain numbers or RFC 3339; each keeps the location it was written at, so that a duration of
the wrong kind is reported at the policy's own file:line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..context import Context
from ..errors import Location
from ..source import Document

DEFAULT_STORES = ("semantic", "episodic", "procedural", "working")
DEFAULT_FIDELITY = ("raw", "summary", "abstraction", "keywords")

RULE_TYPES = (
    "stores",
    "sessions",
    "max_age",
    "freshness",
    "version_authority",
    "latest_key",
    "relevance",
)


@dataclass(frozen=True)
class Duration:
    """A duration as written in the policy, with where it was written."""

    value: Any
    where: Location


@dataclass(frozen=True)
class Rule:
    """One entry of the policy's ordered rule list."""

    id: str
    type: str
    config: Mapping[str, Any]
    where: Location


@dataclass(frozen=True)
class StoresRule(Rule):
    """Only records of these stores are eligible."""

    allow: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionsRule(Rule):
    """Records of the current session, and of previous ones where ``include_previous``."""

    include_previous: bool = True


@dataclass(frozen=True)
class MaxAgeRule(Rule):
    """Records older than ``limit`` are not eligible."""

    limit: Duration | None = None


@dataclass(frozen=True)
class FreshnessRule(Rule):
    """Records past their time to live (per store, or the default) are not eligible."""

    default_ttl: Duration | None = None  # None: never expires
    ttl_by_store: Mapping[str, Duration | None] = field(default_factory=dict)


@dataclass(frozen=True)
class VersionAuthorityRule(Rule):
    """An authority record must carry its document's current version (per document, or the default)."""

    current_version: str | None = None
    current_versions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LatestKeyRule(Rule):
    """Of the records that share a key, only the latest is eligible (decided before any other rule)."""


@dataclass(frozen=True)
class RelevanceRule(Rule):
    """Scores each record's relevance to the query (with a recency weight and half-life)."""

    recency_weight: float = 0.0
    half_life: Duration | None = None
    scorer: str = "tfidf"


@dataclass(frozen=True)
class Budget:
    """The round's limits: tokens, and records (None: no limit)."""

    tokens: int | None = None
    max_records: int | None = None


@dataclass(frozen=True)
class Pricing:
    """MemPrice queue parameters: λ_t = c·Q_t/√t, Q_{t+1} = max(0, Q_t + G_t/B − α)."""

    c: float = 1.0
    alpha: float = 0.8
    q0: float = 0.0


@dataclass(frozen=True)
class SolverSettings:
    """The engine that solves, the one that cross-checks it, and its time limit."""

    engine: str = "cp-sat"
    cross_check: str = "dp"
    time_limit_s: float = 10.0


@dataclass(frozen=True)
class CacheSettings:
    """The prompt cache's price (DESIGN §15): provider, input price, value of a dollar."""

    provider: str  # anthropic-5m, anthropic-1h, openai, gemini, none (memsolve.cache.PROVIDERS)
    input_price: float = 0.0  # dollars per million input tokens (provider none: nothing to price)
    value_per_dollar: float = 0.0  # objective units per dollar of input
    min_prefix: int | None = None  # None: the provider's
    prefix_tokens: int = 0  # fixed prompt before the memories (system prompt, tools)
    read: float | None = None  # multipliers of the input price; None: the provider's
    write: float | None = None


@dataclass(frozen=True)
class UtilitySpec:
    """How utilities are derived for records that carry none (from relevance scores)."""

    source: str | None = None
    temperature: float = 0.05
    retention: Mapping[str, float] = field(default_factory=dict)
    model: Any = None  # a memsolve.utility_model.UtilityModel (DESIGN §11); None: exp((s − s_best)/T)


@dataclass(frozen=True)
class Policy:
    """A validated memory policy (``kind: MemoryPolicy``)."""

    name: str
    description: str = ""
    file: str | None = None
    sha256: str = ""
    records: str | None = None  # default records file, resolved against the policy's folder
    tenant: str | None = None
    context: Context = Context()  # the schema admits now, session and query here
    budget: Budget = Budget()
    stores: tuple[str, ...] = DEFAULT_STORES
    fidelity: tuple[str, ...] = DEFAULT_FIDELITY
    rules: tuple[Rule, ...] = ()
    utility: UtilitySpec = UtilitySpec()
    token_counter: str = "words"
    pricing: Pricing = Pricing()
    solver: SolverSettings = SolverSettings()
    on_invalid_record: str = "error"
    cache: CacheSettings | None = None  # the prompt cache in the objective (DESIGN §15)
    source: Document | None = field(default=None, compare=False, repr=False)

    def locate(self, *path: Any) -> Location:
        """Where a policy field was written (or the policy file, if it was not)."""
        if self.source is None:
            return Location(self.file, path=".".join(map(str, path)))
        return self.source.locate(path)

    def rules_of(self, kind: type[Rule]) -> list[Any]:
        return [rule for rule in self.rules if isinstance(rule, kind)]

    @property
    def authority_rules(self) -> list[VersionAuthorityRule]:
        return self.rules_of(VersionAuthorityRule)
