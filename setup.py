"""Build of the compiled parts: the grid's compression pass (src/schedlab/grid/_compress.c), the
worker choice's bit selection (src/schedlab/cluster/_bits.c) and Megha's slot-mode inner loops
(src/schedlab/schedulers/megha/_slots.c).

Optional: where no C compiler is at hand the install goes on without them and the same functions
run in Python (schedlab.grid.site, schedlab.cluster.bitsets, schedlab.schedulers.megha.slots), with
the same results, only slower.
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
            depends=["src/schedlab/cluster/_bitsel.h"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "schedlab.schedulers.megha._slots",
            ["src/schedlab/schedulers/megha/_slots.c"],
            depends=["src/schedlab/cluster/_bitsel.h"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
