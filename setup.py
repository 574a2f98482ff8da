"""Builds the optional compiled kernel; without a C compiler memsolve installs and runs on numpy alone."""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "memsolve.solver._kernel",
            sources=["src/memsolve/solver/_kernel.c"],
            # no fused multiply-add: scaling must round exactly as numpy does
            extra_compile_args=["-ffp-contract=off"] if os.name == "posix" else [],
            libraries=["m"] if os.name == "posix" else [],
            optional=True,  # a failed build leaves the pure-numpy engines, never a failed install
        ),
        # the duplicate-key gate's byte scan (source.counted_keys); numpy does it without a compiler
        Extension("memsolve._scan", sources=["src/memsolve/_scan.c"], optional=True),
    ]
)
