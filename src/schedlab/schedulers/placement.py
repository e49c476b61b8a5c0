"""Worker choice: the extension point where a scheduler picks which eligible free worker gets a task.

Kubernetes' scheduling framework names the points where its scheduler decides
(filter, score, reserve, …) so that a policy is written once and plugged in by
configuration. schedlab's placement has the same points:

* **eligibility** (filter) — the workers that have every machine constraint
  of a task: :meth:`~schedlab.cluster.bitsets.ConstraintBitsets.eligible` over a
  group of workers kept in *min-constraints order* (by number of machine
  constraints, then id), intersected with what the scheduler's view holds
  free — a bitset of candidate positions;
* **worker choice** (score) — which candidate gets the task: a
  :class:`WorkerChoice`, chosen by name with every scheduler's
  ``worker_choice`` parameter, from :data:`CHOICES` (built in:
  ``min-constraints`` and ``random``) or a plugin's entry point in the group
  ``schedlab.worker_choices``. Every scheduler that chooses among free workers
  — the exact views of ``ideal`` and ``centralized``, Pigeon's masters,
  Megha's GMs in each partition and across a group (``choice_scope``) — asks
  the same object, so a new policy applies to all of them;
* **reserve/release** — the view's take and give back of a worker (the
  schedulers' own views; a resource request in multi-resource mode).

The two built-in choices are what the papers use. ``min-constraints`` takes
the candidate with the fewest machine constraints — the highest set bit, as
positions are in min-constraints order — keeping versatile workers free;
``random`` draws one uniformly from the scheduler's own stream. The compiled
inner loops (Megha's ``gm_take``, the random set-bit draw) know these two by
their :attr:`WorkerChoice.draw` (``None``: the highest bit; the stream's
``random``: a uniform one); a plugin's choice is not ``native`` and runs the
Python loops with its own :meth:`~WorkerChoice.pick` and
:meth:`~WorkerChoice.fit` — slower, the same results for the built-ins.

Choices where nothing prescribes: a plugin cannot shadow a built-in name; the
choice of a task with resource requests (:meth:`WorkerChoice.fit`) is the
policy's among the candidates with room, so a policy is one object for both
resource modes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, ClassVar

from schedlab.cluster.bitsets import choose_position_drawn, fit_position, kth_set_bit
from schedlab.errors import InputError

ENTRY_POINT_GROUP = "schedlab.worker_choices"
EPS = 1e-9  # resource amounts compare within this (capacity vectors are sums of floats)
Request = Sequence[float] | None  # a task's resource request (None in slot mode)


class WorkerChoice:
    """A policy for picking one of a task's candidate workers.

    Candidates are a bitset of positions in min-constraints order: a higher
    position has no more machine constraints than a lower one, the highest set
    bit the fewest. Subclasses override :meth:`pick` (slot mode) and may
    override :meth:`fit` (resource requests) and :meth:`pick_across` (one
    choice among several partitions' candidates); a policy that draws takes
    its numbers from ``rng``, the scheduler's stream, so runs stay reproducible.
    """

    name: ClassVar[str] = ""
    # the compiled loops' form of this policy: None (the highest candidate) or the stream's ``random`` method (a
    # uniform draw); only the built-ins are native — the compiled loops know nothing else
    native: ClassVar[bool] = False
    draws: ClassVar[bool] = False  # the policy takes numbers from the stream

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.draw: Callable[[], float] | None = None

    def pick(self, cand: int) -> int:
        """The chosen position among the set bits of ``cand`` (> 0)."""
        raise NotImplementedError

    def fit(self, cand: int, free: Sequence[Sequence[float]], req: Sequence[float]) -> int:
        """A position of ``cand`` whose ``free[pos]`` holds ``req`` (the policy's pick among those), or -1."""
        fitting = 0
        c = cand
        while c:
            pos = c.bit_length() - 1
            fv = free[pos]
            if all(r <= fv[k] + EPS for k, r in enumerate(req)):
                fitting |= 1 << pos
            c ^= 1 << pos
        return self.pick(fitting) if fitting else -1

    def pick_across(self, cands: Sequence[tuple[int, int]], constraints: Callable[[int, int], int]) -> tuple[int, int] | None:
        """One choice among several groups' candidates ``(group, bitset)``: ``(group, position)`` or None.

        ``constraints(group, pos)`` is the worker's number of machine constraints. By default: the policy's
        pick within the union, seen as the concatenation of the groups in order."""
        total = sum(c.bit_count() for _g, c in cands)
        if not total:
            return None
        # the concatenation as one bitset: each group's candidates shifted past the ones before
        union, shift, spans = 0, 0, []
        for g, c in cands:
            width = max(c.bit_length(), 1)
            union |= c << shift
            spans.append((g, shift, width))
            shift += width
        pos = self.pick(union)
        for g, start, width in spans:
            if start <= pos < start + width:
                return g, pos - start
        raise AssertionError("pick outside the candidates")

    def first_fit_rank(self, size: int, pos: int) -> int:
        """How many workers a scan in min-constraints order looks at to find ``pos`` (a cost model's count): a
        scan to the chosen one for a policy that does not draw, all of them for one that does."""
        return size if self.draws else size - pos


class MinConstraints(WorkerChoice):
    """The candidate with the fewest machine constraints (the first such in min-constraints order): keeps
    versatile workers free for the tasks that need them (the constraint-aware Megha paper's best fit)."""

    name = "min-constraints"
    native = True

    def pick(self, cand: int) -> int:
        return cand.bit_length() - 1

    def fit(self, cand: int, free: Sequence[Sequence[float]], req: Sequence[float]) -> int:
        return fit_position(cand, free, req, None)

    def pick_across(self, cands: Sequence[tuple[int, int]], constraints: Callable[[int, int], int]) -> tuple[int, int] | None:
        best = None
        for g, c in cands:
            if c:
                top = c.bit_length() - 1  # positions are in min-constraints order within a group
                n = constraints(g, top)
                if best is None or n < best[0]:
                    best = (n, g, top)
        return None if best is None else (best[1], best[2])


class RandomChoice(WorkerChoice):
    """A candidate drawn uniformly from the scheduler's stream (the constraint-aware Megha paper's
    recommendation for its GMs: GMs choosing alike would collide on the same workers)."""

    name = "random"
    native = True
    draws = True

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.draw = rng.random

    def pick(self, cand: int) -> int:
        return choose_position_drawn(cand, self.draw)

    def fit(self, cand: int, free: Sequence[Sequence[float]], req: Sequence[float]) -> int:
        return fit_position(cand, free, req, self.rng)

    def pick_across(self, cands: Sequence[tuple[int, int]], constraints: Callable[[int, int], int]) -> tuple[int, int] | None:
        total = sum(c.bit_count() for _g, c in cands)
        if not total:
            return None
        k = int(self.rng.random() * total)
        i = 0
        while k >= cands[i][1].bit_count():
            k -= cands[i][1].bit_count()
            i += 1
        return cands[i][0], kth_set_bit(cands[i][1], k)


BUILTIN: dict[str, type[WorkerChoice]] = {c.name: c for c in (MinConstraints, RandomChoice)}


def _plugins() -> dict[str, Any]:
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # pragma: no cover - broken metadata must not break the built-ins
        return {}
    return {ep.name: ep for ep in eps if ep.name not in BUILTIN}


def choice_names() -> list[str]:
    """Every worker choice a scheduler can be given: the built-ins, then the plugins', sorted."""
    return [*BUILTIN, *sorted(_plugins())]


def choice_class(name: str, field: str = "worker_choice") -> type[WorkerChoice]:
    """The policy called ``name``; an unknown name is an :class:`InputError` naming ``field``."""
    cls = BUILTIN.get(name)
    if cls is not None:
        return cls
    plugin = _plugins().get(name)
    if plugin is None:
        raise InputError(field, f"unknown worker choice {name!r} (choose from {', '.join(choice_names())})")
    loaded = plugin.load()
    if not (isinstance(loaded, type) and issubclass(loaded, WorkerChoice)):
        raise InputError(field, f"plugin {name!r} is not a schedlab WorkerChoice class")
    return loaded


def worker_choice(name: str, rng: random.Random) -> WorkerChoice:
    """The policy called ``name``, drawing (if it draws) from ``rng``."""
    return choice_class(name)(rng)
