"""The CI half: what a pipeline runs to gate a policy change.

Audits against a baseline, policy diffs, policy unit tests, lints, ``explain`` and the
greedy-vs-exact comparison, all reported as :class:`~memsolve.ci.findings.Finding` values.
"""
