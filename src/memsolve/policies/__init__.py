"""Policies: the YAML a policy author writes, and the rules it declares.

``load`` reads and validates a policy into the typed values of ``model``; ``rules`` judges
every record under every rule, producing the ``verdicts`` the rest of the pipeline reads.
"""
