"""Build of the one compiled part: the grid's compression pass (src/schedlab/grid/_compress.c).

Optional: where no C compiler is at hand the install goes on without it and the grid runs the
same pass in Python (schedlab.grid.site), with the same results, only slower. Everything else is
in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "schedlab.grid._compress",
            ["src/schedlab/grid/_compress.c"],
            # No fused multiply-adds: the pass must give the Python pass's sums bit for bit.
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
