"""Every finding code memsolve reports, described once: SARIF's ``tool.driver.rules``, the help
links and the README's table of codes (held to this table by
tests/ci/test_findings.py::test_every_code_has_its_row_in_the_readme).

A code's help URI points at its row in the README's "In CI" section (``#ms001`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass

HOMEPAGE = "https://github.com/memsolve/memsolve"
HELP_BASE = f"{HOMEPAGE}/blob/main/README.md"


@dataclass(frozen=True)
class Code:
    """One finding code: its stable id, a name, what it finds, and what to do about it."""

    id: str
    name: str  # PascalCase, SARIF's reportingDescriptor.name
    level: str  # the level it is reported at: error, warning or note
    short: str  # one line: what it finds
    help: str  # what it means and what to do

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def help_uri(self) -> str:
        return f"{HELP_BASE}#{self.anchor}"


CODES: tuple[Code, ...] = (
    Code("MS000", "PolicyDoesNotLoad", "error", "the policy does not load (schema or semantic error)",
         "The policy fails its schema or a semantic check; the message names the field. Fix the policy: nothing "
         "else is checked until it loads."),
    Code("MS001", "RuleExcludesNothing", "warning", "a rule excludes nothing on the given records",
         "On the records the policy names, no record fails this rule. It may be redundant, or the records may not "
         "exercise it; add records that it should exclude, or remove the rule."),
    Code("MS002", "TtlLongerThanMaxAge", "warning", "a freshness ttl is longer than max_age, so it never decides",
         "A record older than max_age is excluded by max-age first, so a longer ttl never decides anything. "
         "Shorten the ttl or lengthen max_age."),
    Code("MS003", "EmptyStoreAllowList", "error", "an empty store allow-list excludes every record",
         "`stores: {allow: []}` lets no record through. List the stores the agent may read."),
    Code("MS004", "BudgetBelowSmallestRecord", "warning",
         "the budget is below the smallest representation of every record",
         "No record fits the token budget at any fidelity, so nothing can be selected. Raise `budget.tokens` or "
         "add smaller representations."),
    Code("MS005", "SessionScopeWithoutSession", "warning",
         "current-session scope without a session in the policy (every call must pass one)",
         "`sessions: {include_previous: false}` keeps only the current session, and the policy names none: every "
         "call must pass `--session` (or `session=`), or every record is excluded."),
    Code("MS006", "RelevanceWithoutQuery", "note",
         "a relevance rule with no query in the policy is active only with --query",
         "The relevance rule scores records against a query; without `context.query` in the policy it takes "
         "effect only when a query is given at the call."),
    Code("MS007", "RelevanceUtilityWithoutRule", "error", "`utility: {from: relevance}` without a relevance rule",
         "Utilities derived from relevance need a relevance rule to score the records. Add one, or give records "
         "their own utilities."),
    Code("MS008", "RecordLintsSkipped", "note",
         "the record lints (MS001, MS004) were skipped: solving needs context the policy lacks",
         "The policy cannot be solved on its records without context it lacks (a `now`, a query, a session). "
         "Pass `--records` with a case file that carries it, or add it to the policy."),
    Code("changed-outcome", "ChangedOutcome", "error", "a record's outcome differs from the baseline",
         "The record is selected, dropped or excluded differently than the baseline says (or at another level, "
         "or by another rule). If the change is intended, store a new baseline with "
         "`memsolve audit --write-baseline FILE --force`."),
    Code("new-or-missing-record", "NewOrMissingRecord", "error", "a record is in the run or the baseline, not both",
         "The records changed since the baseline was written. Store a new baseline if that is intended."),
    Code("invariant-tenant", "InvariantTenant", "error", "a record outside the tenant was considered",
         "A selected or dropped record belongs to another tenant: tenant isolation is broken. This is a bug in "
         "memsolve; report it."),
    Code("invariant-authority", "InvariantAuthority", "error",
         "a selected authority record does not carry the current version",
         "An authority-bearing record bound to a superseded version reached the agent. Check the policy's "
         "`version_authority` rule and the current versions given."),
    Code("invariant-freshness", "InvariantFreshness", "error", "a selected record is past its ttl",
         "A record older than its ttl (record, store or default) was selected. Check the freshness rule."),
    Code("invariant-budget", "InvariantBudget", "error", "the selection exceeds the token budget",
         "The selected records' tokens exceed the budget, or disagree with the result's `tokens_used`. This is a "
         "bug in memsolve; report it."),
    Code("invariant-count", "InvariantCount", "error", "the selection exceeds max_records",
         "More records were selected than `budget.max_records` allows. This is a bug in memsolve; report it."),
    Code("test-failed", "PolicyTestFailed", "error", "a policy test case's expectations do not hold",
         "A record named in the case got another outcome, level or rule than expected; the message lists each "
         "mismatch."),
    Code("test-error", "PolicyTestError", "error", "a policy test case could not be solved",
         "Solving the case failed (for example a missing `now` or query); the message says why."),
    Code("input-error", "InputError", "error", "an input could not be read, so the command stopped (exit 2)",
         "A policy, records file, baseline, policy test or option is missing or invalid; the message names the file, "
         "line and field. Nothing after it was checked: fix it and run again."),
    Code("solver-error", "SolverError", "error", "a solve failed, so the command stopped (exit 3)",
         "An engine failed or the exact engines disagreed; the message says why. Nothing after it was checked. This "
         "is a bug in memsolve or its solver; report it."),
)

BY_ID: dict[str, Code] = {code.id: code for code in CODES}
