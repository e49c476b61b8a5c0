"""Shared helpers for the grid tests: a one-site simulation and a brute-force conservative site."""

from __future__ import annotations

from dataclasses import dataclass, field

from schedlab.grid.site import ConservativeSite, Entry, Site, make_site
from schedlab.sim.kernel import Kernel


class ReferenceConservativeSite(ConservativeSite):
    """Conservative backfilling with the textbook compression: every queued job, in order of its
    reservation, is taken out of the profile and put back at its earliest fit. No pruning."""

    def _compress(self, now: float, lo: float, hi: float) -> None:
        profile = self.profile
        for *_, e in list(self.queue):  # in order of reservation
            r = e.reservation
            profile.add(r, r + e.estimate, e.size)
            s = profile.earliest(now, e.size, e.estimate)
            profile.add(s, s + e.estimate, -e.size)
            assert s <= r
            if s < r:
                e.reservation = s
                if self.on_reserve is not None:
                    self.on_reserve(e, s)
        self.queue = sorted((e.reservation, e.seq, e.size, e.estimate, e) for *_, e in self.queue)


@dataclass
class OneSiteRun:
    site: Site
    entries: list[Entry]
    first_reservation: dict[int, float] = field(default_factory=dict)
    reservations: dict[int, list[float]] = field(default_factory=dict)


def run_one_site(
    jobs, processors: int, policy: str = "conservative", reference: bool = False, compiled: bool = True
) -> OneSiteRun:
    """Simulate ``jobs`` = [(arrival, size, runtime, estimate)] on one site; record every reservation.

    ``compiled=False`` makes a conservative site compress with the Python pass instead of the compiled one.
    """
    kernel = Kernel()
    site = ReferenceConservativeSite(0, processors, kernel) if reference else make_site(policy, 0, processors, kernel)
    if isinstance(site, ConservativeSite):
        site.use_compiled = compiled
    entries = [Entry(size, est, run, i) for i, (_a, size, run, est) in enumerate(jobs)]
    out = OneSiteRun(site, entries)
    if isinstance(site, ConservativeSite):

        def on_reserve(e: Entry, r: float) -> None:
            out.first_reservation.setdefault(e.job, r)
            out.reservations.setdefault(e.job, []).append(r)

        site.on_reserve = on_reserve
    for (arrival, *_), e in zip(jobs, entries, strict=True):
        kernel.call_at(arrival, site.submit, e)
    kernel.run()
    return out


def max_allocated(entries: list[Entry]) -> int:
    """Most processors held at once by the entries' [start, start + runtime) intervals."""
    points = []
    for e in entries:
        if e.runtime > 0:
            points.append((e.start, 1, e.size))
            points.append((e.start + e.runtime, 0, -e.size))  # ends sort before starts at equal times
    held = peak = 0
    for _t, _kind, delta in sorted(points):
        held += delta
        peak = max(peak, held)
    return peak
