"""A small, checked spec language for the distributions of synthetic workloads.

Specs are ``kind:arg,arg`` strings, usable on the command line and in YAML:

=====================  ===========================================  ==========
spec                   meaning                                      values
=====================  ===========================================  ==========
``const:V`` or ``V``   always V                                     real / int
``uniform:A,B``        uniform on [A, B] (integers: A..B inclusive) real / int
``exp:MEAN``           exponential with mean MEAN                   real
``lognormal:MU,SIGMA`` exp(N(MU, SIGMA²))                           real
``pareto:ALPHA,XM``    Pareto with shape ALPHA and scale XM         real
``geom:MEAN``          geometric on 1, 2, … with mean MEAN          int
``poisson:MEAN``       1 + Poisson(MEAN − 1) (at least one)         int
``lognormal:MU,SIGMA`` ⌈exp(N(MU, SIGMA²))⌉                        int
``pareto:ALPHA,XM``    ⌊Pareto(ALPHA, XM)⌋, ALPHA > 1, XM ≥ 1        int
=====================  ===========================================  ==========

Integer specs (task counts) must produce values ≥ 1; real specs (durations)
values ≥ 0. The integer ``lognormal`` and ``pareto`` give heavy-tailed task
counts (a few jobs with very many tasks, as in the Yahoo and Google traces);
an integer Pareto needs ALPHA > 1 so that its mean is finite (a smaller shape
draws jobs of millions of tasks in a few thousand), and its ``mean`` is the
continuous distribution's (the rounding shifts it by less than one). A bad spec raises :class:`~schedlab.errors.InputError` naming the
field it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError

_REAL_KINDS = {"const": 1, "uniform": 2, "exp": 1, "lognormal": 2, "pareto": 2}
_INT_KINDS = {"const": 1, "uniform": 2, "geom": 1, "poisson": 1, "lognormal": 2, "pareto": 2}


@dataclass(frozen=True)
class Dist:
    """A parsed distribution spec."""

    kind: str
    args: tuple[float, ...]
    integer: bool = False

    @classmethod
    def parse(cls, spec: str | float | int, field: str, *, integer: bool = False) -> Dist:
        kinds = _INT_KINDS if integer else _REAL_KINDS
        s = str(spec).strip()
        kind, _, rest = s.partition(":")
        if not rest:
            kind, rest = "const", s
        if kind not in kinds:
            raise InputError(field, f"unknown distribution {kind!r} in {s!r} (choose from {', '.join(kinds)})")
        try:
            args = tuple(float(a) for a in rest.split(","))
        except ValueError:
            raise InputError(field, f"arguments of {s!r} must be numbers") from None
        if len(args) != kinds[kind]:
            raise InputError(field, f"{kind} takes {kinds[kind]} argument(s), got {len(args)} in {s!r}")
        d = cls(kind, args, integer)
        d._check(field, s)
        return d

    def _check(self, field: str, s: str) -> None:
        a = self.args
        lo = 1 if self.integer else 0
        bad = None
        if self.kind == "const" and a[0] < lo:
            bad = f"value must be >= {lo}"
        elif self.kind == "const" and self.integer and a[0] != int(a[0]):
            bad = "value must be an integer"
        elif self.kind == "uniform" and not (lo <= a[0] <= a[1]):
            bad = f"need {lo} <= A <= B"
        elif self.kind == "exp" and a[0] <= 0:
            bad = "mean must be > 0"
        elif self.kind in ("geom", "poisson") and a[0] < 1:
            bad = "mean must be >= 1"
        elif self.kind == "lognormal" and a[1] < 0:
            bad = "SIGMA must be >= 0"
        elif self.kind == "pareto" and (a[0] <= 0 or a[1] <= 0):
            bad = "ALPHA and XM must be > 0"
        elif self.kind == "pareto" and self.integer and (a[0] <= 1 or a[1] < 1):
            bad = "task counts need ALPHA > 1 (a finite mean) and XM >= 1"
        if bad:
            raise InputError(field, f"{s!r}: {bad}")

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        a = self.args
        k = self.kind
        if k == "const":
            out = np.full(n, a[0])
        elif k == "uniform":
            out = rng.integers(int(a[0]), int(a[1]) + 1, size=n) if self.integer else rng.uniform(a[0], a[1], size=n)
        elif k == "exp":
            out = rng.exponential(a[0], size=n)
        elif k == "lognormal":
            out = rng.lognormal(a[0], a[1], size=n)
            if self.integer:
                out = np.ceil(out)  # at least one task
        elif k == "pareto":
            out = (rng.pareto(a[0], size=n) + 1.0) * a[1]
        elif k == "geom":
            out = rng.geometric(1.0 / a[0], size=n)
        elif k == "poisson":
            out = 1 + rng.poisson(a[0] - 1.0, size=n)
        else:  # pragma: no cover - parse() admits only the kinds above
            raise AssertionError(k)
        return out.astype(np.int64) if self.integer else out.astype(float)

    @property
    def mean(self) -> float:
        a = self.args
        return {
            "const": lambda: a[0],
            "uniform": lambda: (a[0] + a[1]) / 2,
            "exp": lambda: a[0],
            "lognormal": lambda: float(np.exp(a[0] + a[1] ** 2 / 2)),
            "pareto": lambda: a[0] * a[1] / (a[0] - 1) if a[0] > 1 else float("inf"),
            "geom": lambda: a[0],
            "poisson": lambda: a[0],
        }[self.kind]()

    def __str__(self) -> str:
        return f"{self.kind}:{','.join(f'{x:g}' for x in self.args)}"
