"""Bitset helpers over Python ints, and per-group constraint bitsets for matching.

Machine and task constraints are ``int`` masks over the constraint catalog (bit
``c`` set = constraint ``c``). A *group* of workers (a Megha partition, a Pigeon
group, a whole data center) is indexed by :class:`ConstraintBitsets`: one int per
constraint with bit ``i`` set when the group's ``i``-th worker satisfies it.
The workers eligible for a task are the AND of the bitsets of the task's
constraints (Megha paper, Algorithm 1; constraint-aware paper, Section 4.3);
ANDing with an availability bitset gives the candidates.

Workers can be ranked inside a group by their number of machine constraints
(then by global id), so that "minimum constraints" worker choice is a single
bit query; the preferred worker holds the highest bit (see ConstraintBitsets).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

try:  # kth_set_bit and random_set_bit in C (setup.py builds them where a C compiler is at hand)
    from schedlab.cluster import _bits as compiled
except ImportError:  # pragma: no cover - the install had no compiler: the Python twins below
    compiled = None

NUM_CONSTRAINTS = 21  # Sharma et al.'s catalog, ids 0..20

# Memory one per-mask cache may hold before it sheds entries (see MaskCache).
CACHE_BYTES = 64 << 20
_ENTRY_OVERHEAD = 100  # a dict slot, the key and the value's object header, roughly


class MaskCache(dict):
    """Values derived from a task mask (eligible bitsets, member lists), memoised within a memory budget.

    A run meets as many distinct task masks as its constraint draws produce —
    15,000 in 10⁶ tasks, more as the trace grows — and each entry is the size
    of its group of workers (12.5 kB as a bitset of 10⁵ workers), so an
    unbounded cache grew by hundreds of megabytes. The draws are skewed (the
    2,600 commonest masks cover 97 % of tasks), so when ``budget`` bytes are
    exceeded the cache keeps, up to half the budget, the entries that had to be
    computed most often (a mask computed again after being shed is one that
    keeps coming back) and drops the rest; ``pinned`` entries always stay.
    Lookups stay plain ``dict.get`` calls, and since every value is a pure
    function of its mask, results do not change.
    """

    __slots__ = ("budget", "used", "pinned", "sizes", "computed")

    def __init__(self, budget: int = CACHE_BYTES, pinned: dict | None = None) -> None:
        super().__init__(pinned or {})
        self.budget = budget
        self.used = 0
        self.pinned = dict(pinned or {})
        self.sizes: dict[int, int] = {}
        self.computed: dict[int, int] = {}  # mask -> times its value was computed (a few ints per distinct mask)

    def put(self, key: int, value: object, nbytes: int) -> None:
        """Remember ``value`` for ``key``, just computed; it holds about ``nbytes`` bytes."""
        cost = nbytes + _ENTRY_OVERHEAD
        computed = self.computed
        computed[key] = computed.get(key, 0) + 1
        if self.used + cost > self.budget:
            self._shed()
        self[key] = value
        self.sizes[key] = cost
        self.used += cost

    def _shed(self) -> None:
        computed, sizes = self.computed, self.sizes
        ranked = sorted(sizes, key=lambda k: (-computed[k], k))
        kept: dict[int, object] = {}
        used = 0
        for k in ranked:
            if used + sizes[k] > self.budget // 2:
                break
            kept[k] = self[k]
            used += sizes[k]
        self.clear()  # in place: hot loops hold a reference to this dict
        self.update(self.pinned)
        self.update(kept)
        self.sizes = {k: sizes[k] for k in kept}
        self.used = used


def mask_of(constraints: Iterable[int]) -> int:
    """The int mask with the given constraint ids set."""
    m = 0
    for c in constraints:
        m |= 1 << c
    return m


def constraints_of(mask: int) -> list[int]:
    """The constraint ids set in ``mask``, ascending."""
    return list(iter_set_bits(mask))


def lowest_set_bit(x: int) -> int:
    """Index of the lowest set bit of ``x`` (``x`` > 0)."""
    return (x & -x).bit_length() - 1


def iter_set_bits(x: int) -> Iterator[int]:
    """Indices of the set bits of ``x``, ascending."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def set_bits_array(x: int, nbits: int | None = None) -> np.ndarray:
    """Indices of the set bits of ``x`` as a numpy array (fast for long, dense ints)."""
    if x == 0:
        return np.empty(0, dtype=np.int64)
    nbytes = ((nbits if nbits is not None else x.bit_length()) + 7) // 8
    raw = np.frombuffer(x.to_bytes(nbytes, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little"))


def kth_set_bit(x: int, k: int) -> int:
    """Index of the ``k``-th (0-based, from the lowest) set bit of ``x``."""
    if compiled is not None:
        return compiled.kth_set_bit(x, k)
    return kth_set_bit_py(x, k)


def kth_set_bit_py(x: int, k: int) -> int:
    """:func:`kth_set_bit` in Python (the compiled one's reference)."""
    total = x.bit_count()
    if not 0 <= k < total:
        raise ValueError(f"x has {total} set bits, no bit number {k}")
    # Largest p with at least total-k set bits at positions >= p. Shifts and
    # bit_count are linear in the int's size, but there are only log2(size) steps.
    need = total - k
    lo, hi = 0, x.bit_length() - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if (x >> mid).bit_count() >= need:
            lo = mid
        else:
            hi = mid - 1
    return lo


def choose_position(cand: int, rng: random.Random | None) -> int:
    """The worker-choice policy of every scheduler, in slot mode: which of the candidate positions ``cand`` (> 0) gets the task.

    Positions are in min-constraints order, so ``min-constraints`` is the highest
    set bit — the eligible worker with the fewest machine constraints, keeping
    versatile workers free; with an ``rng`` (``random``) it is a uniformly random
    one. :func:`fit_position` is the same policy with resource requests.
    """
    if rng is None:
        return cand.bit_length() - 1
    if compiled is not None:  # the hot path of every random choice: no second Python call
        return compiled.random_set_bit(cand, rng.random)
    return random_set_bit_py(cand, rng)


def random_set_bit(x: int, rng: random.Random) -> int:
    """A uniformly random set bit of ``x`` (``x`` > 0).

    Dense sets use rejection sampling on positions (a few cheap bit tests);
    sparse ones draw a rank and select it with :func:`kth_set_bit`. Positions
    come from ``int(rng.random() * n)``, several times cheaper than
    ``randrange`` and uniform to within 2**-53 relative error. The compiled
    twin makes the same draws and gives the same bit.
    """
    if compiled is not None:
        return compiled.random_set_bit(x, rng.random)
    return random_set_bit_py(x, rng)


def random_set_bit_py(x: int, rng: random.Random) -> int:
    """:func:`random_set_bit` in Python (the compiled one's reference)."""
    return random_set_bit_drawn(x, rng.random)


def choose_position_drawn(cand: int, draw: Callable[[], float] | None) -> int:
    """:func:`choose_position` given the stream's bound ``random`` method (or None for min-constraints):
    for callers that keep the bound method rather than look it up per task."""
    if draw is None:
        return cand.bit_length() - 1
    if compiled is not None:
        return compiled.random_set_bit(cand, draw)
    return random_set_bit_drawn(cand, draw)


def random_set_bit_drawn(x: int, r: Callable[[], float]) -> int:
    """:func:`random_set_bit_py` with the draws of ``r`` (a stream's ``random`` method)."""
    n = x.bit_length()
    count = x.bit_count()
    if count * 8 >= n:
        while True:
            p = int(r() * n)
            if (x >> p) & 1:
                return p
    k = int(r() * count)
    if k < 12:  # strip the k lowest bits: cheaper than the binary search for small k
        for _ in range(k):
            x &= x - 1
        return (x & -x).bit_length() - 1
    return kth_set_bit_py(x, k)


def fit_position(cand: int, free: Sequence[Sequence[float]], req: Sequence[float], rng: random.Random | None, tries: int = 16) -> int:
    """A set bit ``pos`` of ``cand`` whose ``free[pos]`` vector holds ``req``, or -1.

    Without ``rng``: the highest such bit (the most preferred candidate). With
    ``rng``: a uniformly random one — up to ``tries`` random candidates are
    tested first (cheap when most fit), then all fitting ones are collected
    and one is drawn; either way the choice is uniform over the fitting set.
    """
    eps = 1e-9
    if rng is not None:
        for _ in range(tries):
            pos = random_set_bit(cand, rng)
            fv = free[pos]
            if all(r <= fv[k] + eps for k, r in enumerate(req)):
                return pos
    fitting = []
    while cand:
        pos = cand.bit_length() - 1
        fv = free[pos]
        if all(r <= fv[k] + eps for k, r in enumerate(req)):
            if rng is None:
                return pos
            fitting.append(pos)
        cand ^= 1 << pos
    if fitting:
        return fitting[int(rng.random() * len(fitting))]  # type: ignore[union-attr]
    return -1


def highest_set_bit(x: int) -> int:
    """Index of the highest set bit of ``x`` (``x`` > 0): constant time."""
    return x.bit_length() - 1


def constraint_count(masks: Iterable[int]) -> int:
    """How many constraint bits ``masks`` need: Sharma's 21, or more for a trace's own constraints
    (:mod:`schedlab.cluster.machines` numbers them from 0, as many as the trace has)."""
    return max(NUM_CONSTRAINTS, max((m.bit_length() for m in masks), default=0))


def _bitsets_by_constraint(masks: Sequence[int], num_constraints: int) -> list[int]:
    """For each constraint, the int whose bit ``i`` says whether ``masks[i]`` has it (vectorised)."""
    if not masks:
        return [0] * num_constraints
    if max(masks) >= 1 << 62:
        out = [0] * num_constraints
        for i, m in enumerate(masks):
            for c in iter_set_bits(m):
                if c < num_constraints:
                    out[c] |= 1 << i
        return out
    arr = np.asarray(masks, dtype=np.int64)
    out = []
    for c in range(num_constraints):
        has = ((arr >> c) & 1).astype(np.uint8)
        out.append(int.from_bytes(np.packbits(has, bitorder="little").tobytes(), "little"))
    return out


class ConstraintBitsets:
    """Per-constraint bitsets over an ordered group of workers.

    ``workers`` are global worker ids; ``masks[w]`` is worker ``w``'s machine
    constraint mask. Workers are ranked by preference — with
    ``min_constraints_order`` by (number of machine constraints, global id),
    otherwise by global id — and the most preferred worker gets the *highest*
    bit: the preferred candidate of any candidate set ``x`` is then bit
    ``x.bit_length() - 1``, found in constant time, where the lowest set bit
    would need a full-width negation (several times slower on 10,000-bit ints).
    ``order[pos]`` is the worker at bit ``pos`` and ``position[w]`` its bit.
    """

    __slots__ = ("order", "position", "masks", "by_constraint", "all", "size", "_eligible", "_entry_bytes")

    def __init__(
        self,
        workers: Sequence[int],
        masks: Sequence[int],
        *,
        min_constraints_order: bool = False,
        num_constraints: int | None = None,
    ) -> None:
        ranked = list(workers)
        if min_constraints_order:
            ranked.sort(key=lambda w: (masks[w].bit_count(), w))
        self.size = len(ranked)
        order = ranked[::-1]  # bit 0 = least preferred
        self.order: list[int] = order
        self.position: dict[int, int] = {w: i for i, w in enumerate(order)}
        self.masks: list[int] = [masks[w] for w in order]
        self.all = (1 << self.size) - 1
        # default: as many as the group's masks use (groups that must line up pass the cluster's count)
        self.by_constraint = _bitsets_by_constraint(self.masks, constraint_count(self.masks) if num_constraints is None else num_constraints)
        self._eligible = MaskCache(pinned={0: self.all})
        self._entry_bytes = (self.size + 7) // 8

    @property
    def workers(self) -> list[int]:
        """The group's workers, most preferred first."""
        return self.order[::-1]

    def eligible(self, task_mask: int) -> int:
        """Bits of the group's workers whose machine constraints include all of ``task_mask``."""
        bits = self._eligible.get(task_mask)
        if bits is None:
            bits = self.all
            by_c = self.by_constraint
            for c in iter_set_bits(task_mask):
                bits &= by_c[c] if c < len(by_c) else 0
            self._eligible.put(task_mask, bits, self._entry_bytes)
        return bits

    def count_eligible(self, task_mask: int) -> int:
        return self.eligible(task_mask).bit_count()
