"""Build of the compiled parts: the grid's compression pass (src/schedlab/grid/_compress.c) and the
worker choice's bit selection (src/schedlab/cluster/_bits.c).

Optional: where no C compiler is at hand the install goes on without them and the same functions
run in Python (schedlab.grid.site, schedlab.cluster.bitsets), with the same results, only slower.
Everything else is in pyproject.toml.
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
        ),
        Extension(
            "schedlab.cluster._bits",
            ["src/schedlab/cluster/_bits.c"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
    ]
)
