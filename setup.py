"""Builds the optional compiled kernel; without a C compiler memsolve installs and runs on numpy alone."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "memsolve.solver._kernel",
            sources=["src/memsolve/solver/_kernel.c"],
            optional=True,  # a failed build leaves the pure-numpy engines, never a failed install
        )
    ]
)
