"""A computing site: processors, a job queue and its local resource manager (RMS), Section II of the paper.

Each site owns ``processors`` identical processors and queues the parallel jobs
submitted to it — local jobs and copies of global jobs alike; the RMS cannot
tell them apart. A job asks for ``size`` processors for its user-*estimated*
runtime; it really runs for its *actual* runtime, which never exceeds the
estimate (a job is killed at its estimate on real RMSs, and our workloads clamp
runtimes accordingly). Planning uses estimates only; execution uses actual
runtimes.

Queue policies (``policy``):

* ``conservative`` (the paper's) — conservative backfilling (Mu'alem &
  Feitelson, the paper's [13]): every job gets a reservation at submission, the
  earliest start at which it fits in the availability profile
  (:class:`~schedlab.grid.profile.Profile`) without touching any earlier
  reservation. When processors are freed early — a job ends before its
  estimate, or a duplicate copy is invalidated — the schedule is *compressed*:
  queued jobs, in order of their reservations, are each taken out of the
  profile and put back at their earliest fit. Because a job is re-placed while
  every other claim is in place, its old slot is still free, so reservations
  only ever move earlier: no job starts later than the reservation it got when
  it was queued, and inserting or moving a job never delays another job's
  reservation. The paper does not fix the order of the re-placement; queue
  (arrival) order is the common choice. We use reservation order, in which one pass leaves no job able to move earlier
  (see :meth:`ConservativeSite._compress`), so the schedule is always fully
  compressed, and which lets the pass skip the jobs that provably cannot move
  — what keeps queues of hundreds of jobs affordable. The two orders can give
  a hole to different jobs; both keep every guarantee above. Where the install
  built it, the same pass runs compiled (``schedlab/grid/_compress.c``, the
  same reservations bit for bit, 4–7× faster on herded queues); the Python
  pass here is the reference and the fallback.
  Zero-length jobs (estimate 0) claim nothing and start on arrival; so does, in effect, a job
  too short to be told apart from zero where it starts (``t + estimate == t`` in floating
  point): its claim is empty, so it holds no processor when it starts either.
* ``easy`` — EASY backfilling: FCFS, and a waiting job may jump ahead if it
  does not delay the reservation of the *first* queued job (shadow time and
  extra processors computed from the running jobs' estimated ends).
* ``fcfs`` — first come, first served, no backfilling.

Load information for the global schedulers (Section II's ranking criteria) is
kept incrementally so a query costs O(1): the number of waiting jobs (*Qlen*),
busy processors over processors (*Util*), and the outstanding work in
processor-seconds divided by the processors — remaining estimated time of the
running jobs plus estimated runtimes of the waiting ones (*Est.QT*), or the
same with actual runtimes (*Act.QT*). The paper words the last two as "total
(estimated / actual) execution time of all queued or running jobs"; we weigh
each job by its size because a 64-processor job holds a site 64 times as much
as a serial one, and divide by the processors so the figure reads as seconds.

Events: a site keeps at most one pending wake-up in the kernel, at the next
actual completion or reservation start; :meth:`Site.submit` and
:meth:`Site.cancel` move it earlier when needed. Every wake-up first retires
the jobs whose actual end has come, so a job never starts on processors that
are still held (an :class:`~schedlab.errors.InvariantError` guards it).

Copies of global jobs (duplication, Section III-A) carry an ``owner``; when a
copy is about to start, the site asks the owner's scheduler to validate it
(``owner.validate(entry, site)``), which also invalidates the job's other copies.
Copies are never started synchronously inside :meth:`Site.submit`, so all the
copies of one job are queued before any of them can win.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from schedlab.errors import InputError, InvariantError
from schedlab.grid import profile as profile_module
from schedlab.grid.profile import Profile
from schedlab.sim.kernel import Kernel

POLICIES = ("conservative", "easy", "fcfs")
CRITERIA = ("qlen", "util", "est_qt", "act_qt")

INF = float("inf")
# Rounding slack (seconds) for pruning tests computed by subtracting times: a prune may only
# ever be too cautious, never drop a window that fits.
_SLACK = 1e-6

# Entry states
QUEUED = 0
RUNNING = 1
DONE = 2
CANCELLED = 3


class Entry:
    """One job (or one copy of a global job) at one site."""

    __slots__ = ("size", "estimate", "runtime", "submit", "reservation", "start", "state", "owner", "job", "seq")

    def __init__(self, size: int, estimate: float, runtime: float, job: Any, owner: Any = None) -> None:
        self.size = size
        self.estimate = estimate
        self.runtime = runtime
        self.job = job
        self.owner = owner
        self.submit = 0.0
        self.reservation = INF
        self.start = INF
        self.state = QUEUED
        self.seq = 0


class Site:
    """Common part of the three queue policies: processors, running jobs, loads, wake-ups, records."""

    policy = "base"

    def __init__(self, index: int, processors: int, kernel: Kernel) -> None:
        if processors < 1:
            raise InputError("processors", f"must be >= 1, got {processors}")
        self.index = index
        self.processors = processors
        self.kernel = kernel
        self.busy = 0
        self.running: list[tuple[float, int, Entry]] = []  # heap by actual end
        self._seq = 0
        self._wake_at = INF
        self._wake_event: list | None = None
        # Load accounting (see module doc); sums of size × time.
        self.queued = 0
        self.queued_estimated_work = 0.0
        self.queued_actual_work = 0.0
        self.running_estimated_end_work = 0.0
        self.running_actual_end_work = 0.0
        # Records
        self.busy_area = 0.0  # processor-seconds of all jobs started (run to their actual end)
        self.local_queue_times: list[float] = []
        self.local_jobs: list[int] = []
        self.started_jobs = 0
        self.max_queued = 0
        self.check_allocation = True

    # -- load information -----------------------------------------------------------------------
    def load(self, criterion: str, now: float) -> float:
        """The site's value of a ranking criterion at ``now`` (lower is better)."""
        if criterion == "qlen":
            return float(self.queued)
        if criterion == "util":
            return self.busy / self.processors
        if criterion == "est_qt":
            return (self.queued_estimated_work + self.running_estimated_end_work - now * self.busy) / self.processors
        if criterion == "act_qt":
            return (self.queued_actual_work + self.running_actual_end_work - now * self.busy) / self.processors
        raise InputError("criterion", f"unknown ranking criterion {criterion!r} (choose from {', '.join(CRITERIA)})")

    # -- wake-ups -------------------------------------------------------------------------------
    def _wake(self, t: float) -> None:
        if t < self._wake_at:
            if self._wake_event is not None:
                Kernel.cancel(self._wake_event)
            self._wake_at = t
            self._wake_event = self.kernel.call_at(t, self._on_wake)

    def _on_wake(self) -> None:
        self._wake_at = INF
        self._wake_event = None
        self._step(self.kernel.now)

    # -- running jobs ---------------------------------------------------------------------------
    def _start(self, e: Entry, now: float) -> bool:
        """Start ``e`` now (it has already left the queue); False if its owner refused it."""
        owner = e.owner
        if owner is not None and not owner.validate(e, self, now):
            e.state = CANCELLED
            self._released_unstarted(e, now)
            return False
        size = e.size
        self.started_jobs += 1
        if owner is None:
            self.local_queue_times.append(now - e.submit)
            self.local_jobs.append(e.job)
        if e.estimate == 0 or now + e.estimate == now:
            # Claims no time, holds nothing: done as soon as started.
            e.state = DONE
            e.start = now
            return True
        busy = self.busy + size
        if busy > self.processors and self.check_allocation:
            raise InvariantError(f"site {self.index}: {busy} processors allocated of {self.processors} at t={now}")
        self.busy = busy
        e.state = RUNNING
        e.start = now
        end = now + e.runtime
        self._seq += 1
        heappush(self.running, (end, self._seq, e))
        self.running_estimated_end_work += size * (now + e.estimate)
        self.running_actual_end_work += size * end
        self.busy_area += size * e.runtime
        return True

    def _released_unstarted(self, e: Entry, now: float) -> None:
        """Hook: a copy refused at its start gives its planned slot back (conservative only)."""

    def _complete_due(self, now: float) -> bool:
        """Retire the jobs whose actual end is ``<= now``; True if any ended before its estimate."""
        running = self.running
        early = False
        while running and running[0][0] <= now:
            end, _, e = heappop(running)
            e.state = DONE
            size = e.size
            self.busy -= size
            est_end = e.start + e.estimate
            self.running_estimated_end_work -= size * est_end
            self.running_actual_end_work -= size * end
            if end < est_end:
                early = True
                self._early_end(e, end)
        if self.busy == 0:  # keep idle sites' loads exactly zero so that ties stay ties
            self.running_estimated_end_work = 0.0
            self.running_actual_end_work = 0.0
        return early

    def _early_end(self, e: Entry, end: float) -> None:
        """Hook: a job ended before its estimate."""

    # -- queue accounting -----------------------------------------------------------------------
    def _account_queued(self, e: Entry, sign: int) -> None:
        self.queued += sign
        self.queued_estimated_work += sign * e.size * e.estimate
        self.queued_actual_work += sign * e.size * e.runtime
        if self.queued == 0:
            self.queued_estimated_work = 0.0
            self.queued_actual_work = 0.0
        elif self.queued > self.max_queued:
            self.max_queued = self.queued

    # -- interface for the policies -------------------------------------------------------------
    def submit(self, e: Entry) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cancel(self, e: Entry) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _step(self, now: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def utilization(self, horizon: float) -> float:
        return self.busy_area / (self.processors * horizon) if horizon > 0 else 0.0


class ConservativeSite(Site):
    """Conservative backfilling: a reservation for every job, compression on early ends.

    Waiting jobs are kept in ``queue``, a list sorted by (reservation,
    submission): the head is the next to start, and a compression can begin
    at the first job reserved after the freed region.
    """

    policy = "conservative"

    def __init__(self, index: int, processors: int, kernel: Kernel) -> None:
        super().__init__(index, processors, kernel)
        self.profile = Profile(processors, kernel.now)
        # Waiting jobs as (reservation, seq, size, estimate, entry), sorted: tuples compare in C,
        # with no key calls, and a compression reads a job's size and estimate without its entry.
        self.queue: list[tuple[float, int, int, float, Entry]] = []
        self.compressions = 0
        self.moves = 0
        self._freed_hi = -INF
        self.on_reserve: Callable[[Entry, float], None] | None = None  # test hook: called when a job is (re)placed
        # Compress with the compiled pass (schedlab/grid/_compress.c) when it was built and the
        # profile is one byte a segment; False runs the Python pass below, which gives the same
        # reservations (tests/grid/test_compiled.py).
        self.use_compiled = True

    def submit(self, e: Entry) -> None:
        now = self.kernel.now
        profile = self.profile
        profile.trim(now)
        if self.running and self.running[0][0] <= now:
            self._retire(now)
        size = e.size
        if size > self.processors:
            raise InputError("job", f"job of {size} processors cannot run on a site of {self.processors}")
        est = e.estimate
        s = profile.earliest(now, size, est)
        profile.add(s, s + est, -size)
        e.submit = now
        e.reservation = s
        e.state = QUEUED
        self._seq += 1
        e.seq = self._seq
        insort(self.queue, (s, e.seq, size, est, e))
        self._account_queued(e, 1)
        if self.on_reserve is not None:
            self.on_reserve(e, s)
        if e.owner is None:
            # A local job: nothing else can be triggered by starting it, so do it at once.
            self._start_due(now)
            self._schedule_next()
        else:
            self._schedule_next(now)

    def _unqueue(self, e: Entry) -> None:
        queue = self.queue
        i = bisect_left(queue, (e.reservation, e.seq))
        if queue[i][4] is not e:  # pragma: no cover - the queue is kept sorted
            raise InvariantError(f"site {self.index}: queue out of order")
        del queue[i]

    def cancel(self, e: Entry) -> None:
        """Invalidate a queued copy: free its reservation and compress (starts happen at the wake-up)."""
        if e.state != QUEUED:
            return
        now = self.kernel.now
        self._unqueue(e)
        e.state = CANCELLED
        self._account_queued(e, -1)
        profile = self.profile
        profile.trim(now)
        r = e.reservation
        profile.add(r, r + e.estimate, e.size)
        self._compress(now, r, r + e.estimate)
        self._schedule_next(now)

    def _released_unstarted(self, e: Entry, now: float) -> None:
        r = e.reservation
        self.profile.add(r, r + e.estimate, e.size)
        self._compress(now, r, r + e.estimate)

    def _early_end(self, e: Entry, end: float) -> None:
        # Give back the rest of the job's claim, which ran from its reservation for its estimate.
        claim_end = e.reservation + e.estimate
        self.profile.add(end, claim_end, e.size)
        if claim_end > self._freed_hi:
            self._freed_hi = claim_end

    def _retire(self, now: float) -> None:
        """Retire the jobs that have ended and compress into the processors they freed early."""
        self._freed_hi = -INF
        if self._complete_due(now):
            self._compress(now, now, self._freed_hi)

    def _step(self, now: float) -> None:
        self.profile.trim(now)
        self._retire(now)
        self._start_due(now)
        self._schedule_next()

    def _compress(self, now: float, lo: float, hi: float) -> None:
        """Restore full compression after free processors rose on ``[lo, hi)``.

        Invariant kept between events: no queued job could start earlier than
        its reservation without moving another job. Submissions only take
        processors and time only removes candidate starts, so the invariant can
        break only where processors were freed — an early end, a cancelled or
        refused copy, or a job moving earlier. A job reserved at ``r`` needs only
        ``[start, r)`` of a window checked (from ``r`` on it runs inside its own
        claim), so a newly feasible start lies within ``(a − d, min(b, r))`` of a
        freed region ``[a, b)`` with ``a < r``, only if the region has an
        instant with at least the job's size free (its recorded ``cap``), and
        only if the run of that many free processors through the region is as
        long as the part of the window before ``r``.

        Jobs are re-placed in order of their reservations. A job that moves
        frees the rest of its old slot, which starts no earlier than its old
        reservation, hence no earlier than the reservation of any job already
        passed — useless to them. So one pass restores the invariant, and the
        reservations only ever move earlier. The result equals re-placing every
        queued job in that order (the textbook compression; a test checks it).
        """
        queue = self.queue
        if not queue:
            return
        self.compressions += 1
        profile = self.profile
        compiled = profile_module.compiled
        if self.use_compiled and compiled is not None and profile.narrow:
            moves = compiled.compress(queue, profile.times, profile.free, now, lo, hi, self.on_reserve)
            if moves:
                self.moves += moves
                profile.changed()
            if len(profile.times) > 2 * (len(queue) + len(self.running)) + 16:
                profile.merge()
            return
        longest_run = profile.longest_run
        earliest_move = profile.earliest_move
        shift = profile.shift
        max_free = profile.max_free
        on_reserve = self.on_reserve
        # Freed regions (_Region), sorted and disjoint. Regions added later start at or after
        # the reservation being processed, so `lo` stays the lowest start.
        regions = [_Region(lo, hi, profile.max_free(lo, hi))]
        # Regions that ended too long before the current reservation to be reached by a
        # window ending there: usable only by jobs no longer than their longest run of one
        # free processor, so kept apart, sorted by that run (longest first), and scanned
        # only as far as the job's estimate allows. New regions start at or after the
        # current reservation, so they never merge with these.
        far: list[_Region] = []
        far_cap = 0  # the largest `cap` in `far` (caps only fall: far regions never merge)
        max_cap = regions[0].cap
        # Past `horizon`, a job can use no region but through its estimate: it must fit
        # within `run1`, the longest run of one free processor through any region measured.
        horizon = -INF
        run1 = -INF
        # Regions not yet measured for those bounds: only a job past `horizon` needs them, and
        # only those with room for it.
        pending = [regions[0]]
        i = bisect_right(queue, (lo, INF))
        n = len(queue)
        while i < n:
            r, seq, size, d, e = queue[i]
            i += 1
            if size > max_cap:
                continue
            if r > horizon:
                if pending and d > run1:
                    # Only now does a job need the bounds: measure the regions freed since they
                    # were last raised (merging only lengthens runs, so the bounds only grow,
                    # region by region) — those with room for this job; the others cannot help
                    # it and wait for a job that fits them. A region's `cap` never rises, so
                    # one with no free processor is dropped for good.
                    waiting = []
                    for region in pending:
                        if region.cap < size:
                            if region.cap:
                                waiting.append(region)
                            continue
                        run = region.runs.get(1)
                        if run is None:
                            run = region.runs[1] = longest_run(region.a, region.b, 1)
                        if run + _SLACK > run1:
                            run1 = run + _SLACK
                        if region.b + run + _SLACK > horizon:
                            horizon = region.b + run + _SLACK
                    pending = waiting
                if r > horizon and d > run1:
                    continue
            best = r
            used: _Region | None = None  # the region offering `best`
            graduated = False
            for region in regions:
                a = region.a
                if a >= r:
                    break
                # The window's part before `r` must fit in one run of `size` free processors
                # through the region: a job too long for the longest such run cannot use it.
                # Runs of one processor bound all others; try that cheap bound first.
                if region.cap < size:
                    continue
                b = region.b
                runs = region.runs
                gap = r - b
                if gap > _SLACK:  # else no run is too short to reach `r`: no test to make
                    run = runs.get(1)
                    if run is None:
                        run = runs[1] = longest_run(a, b, 1)
                    if gap > run + _SLACK:
                        # Too far behind `r` to hold a window reaching it, for this job and
                        # every later one (reservations only grow along the pass): from now
                        # on only jobs no longer than its run can use it. See `far` below.
                        graduated = True
                        if d > run + _SLACK:
                            continue
                    if size != 1:
                        # The same test with the job's own size, computed once per region and size.
                        run = runs.get(size)
                        if run is None:
                            run = runs[size] = longest_run(a, b, size)
                        if d > run + _SLACK and gap > run + _SLACK:
                            continue
                # A window through the region starts after `a - d`, not before `now`, and
                # before both the region's end and the best start found so far.
                lo_t = a - d if a - d > now else now
                if b > best:
                    b = best
                if lo_t < b:
                    t = earliest_move(lo_t, a, b, size, r, d)
                    if t is not None:
                        best = t
                        used = region
            for region in far if size <= far_cap else ():
                if d > region.far_run:  # type: ignore[operator]  # set for every far region
                    break  # sorted by that bound, longest first
                if region.cap < size:
                    continue
                # A far region lies more than its run behind `r`: only the length test is left.
                runs = region.runs
                run = runs.get(size)
                if run is None:
                    run = runs[size] = longest_run(region.a, region.b, size)
                if d > run + _SLACK:
                    continue
                a = region.a
                b = region.b if region.b < best else best
                lo_t = a - d if a - d > now else now
                t = earliest_move(lo_t, a, b, size, r, d) if lo_t < b else None
                if t is not None:
                    best = t
                    used = region
                elif run != INF:
                    # Jobs moved into the run since it was measured (runs only shrink along the
                    # pass): measure again, so that the next jobs of this size skip it cheaply.
                    runs[size] = longest_run(region.a, region.b, size)
            if graduated:
                near = []
                for region in regions:
                    run = region.runs.get(1)
                    if run is not None and region.a < r and r - region.b > run + _SLACK:
                        region.far_run = run + _SLACK  # the bound `far` is sorted by; never raised
                        if region.cap > far_cap:
                            far_cap = region.cap
                        insort(far, region, key=_longest_first)
                    else:
                        near.append(region)
                regions = near
            if best == r:
                continue
            assert used is not None  # a start earlier than `r` was found in a region
            t = best
            # The job took room in the region it moved into: `move` measures that region's `cap`
            # again, so that the jobs after skip a used-up region at the cheapest test; a region
            # left with no free processor at all is dropped: no job can use it before it merges
            # with processors freed later, which then form a region of their own. (Its cached
            # runs stay upper bounds; measuring them again costs more than it saves.)
            cap = shift(r, t, d, size, profile.found)
            if t <= used.a and (t + d if t + d < r else r) >= used.b:
                # The claim covers the whole region: every instant of it lost `size`, and so
                # did its most free (at least `size` were free all over the window).
                used.cap -= size
            else:
                used.cap = max_free(used.a, used.b)
            if not used.cap:
                (far if used.far_run is not None else regions).remove(used)
            # Move the job up the queue; the jobs after it keep their places. Most moves keep the
            # job behind the one before it (a cascade shifts a run of jobs alike): then the entry
            # is replaced where it is.
            e.reservation = t
            item = (t, seq, size, d, e)
            k = i - 1
            if k and queue[k - 1] > item:
                del queue[k]
                insort(queue, item, hi=k)
            else:
                queue[k] = item
            self.moves += 1
            if on_reserve is not None:
                on_reserve(e, t)
            # The part of the old slot the job no longer covers has been freed.
            fa = t + d if t + d > r else r
            fb = r + d
            if fa < fb:
                region = _add_region(regions, fa, fb, cap)
                if cap > max_cap:
                    max_cap = cap
                pending.append(region)
        if len(profile.times) > 2 * (n + len(self.running)) + 16:
            profile.merge()

    def _start_due(self, now: float) -> None:
        queue = self.queue
        while queue and queue[0][0] <= now:
            e = queue.pop(0)[4]
            if e.reservation < now:
                raise InvariantError(f"site {self.index}: job reserved for t={e.reservation} started late at t={now}")
            self._account_queued(e, -1)
            self._start(e, now)

    def _schedule_next(self, now: float | None = None) -> None:
        t = self.queue[0][0] if self.queue else INF
        if self.running and self.running[0][0] < t:
            t = self.running[0][0]
        if now is not None and t < now:
            t = now
        if t < INF:
            self._wake(t)


class EasySite(Site):
    """EASY backfilling (``backfill=True``) or plain FCFS (``backfill=False``)."""

    def __init__(self, index: int, processors: int, kernel: Kernel, backfill: bool = True) -> None:
        super().__init__(index, processors, kernel)
        self.backfill = backfill
        self.policy = "easy" if backfill else "fcfs"
        self.queue: dict[Entry, None] = {}

    def submit(self, e: Entry) -> None:
        if e.size > self.processors:
            raise InputError("job", f"job of {e.size} processors cannot run on a site of {self.processors}")
        now = self.kernel.now
        e.submit = now
        e.state = QUEUED
        self.queue[e] = None
        self._account_queued(e, 1)
        if e.owner is None:
            self._step(now)
        else:
            self._wake(now)

    def cancel(self, e: Entry) -> None:
        if e.state != QUEUED:
            return
        e.state = CANCELLED
        del self.queue[e]
        self._account_queued(e, -1)
        self._wake(self.kernel.now)

    def _step(self, now: float) -> None:
        self._complete_due(now)
        queue = self.queue
        if queue:
            self._schedule(now)
        if self.running:
            self._wake(self.running[0][0])

    def _schedule(self, now: float) -> None:
        queue = self.queue
        free_now = self.processors - self.busy
        to_start: list[Entry] = []
        head: Entry | None = None
        for e in queue:
            if e.size <= free_now:
                to_start.append(e)
                if e.estimate > 0:  # a job of no duration holds nothing
                    free_now -= e.size
            else:
                head = e
                break
        if head is not None and self.backfill:
            # Shadow time: when the running jobs (and those just started) free enough processors for the head.
            ends = sorted(
                [(x.start + x.estimate, x.size) for _, _, x in self.running]
                + [(now + x.estimate, x.size) for x in to_start if x.estimate > 0]
            )
            avail = free_now
            shadow = INF
            for t, size in ends:
                avail += size
                if avail >= head.size:
                    shadow = t
                    break
            extra = avail - head.size
            passed = False
            for e in queue:
                if not passed:
                    passed = e is head
                    continue
                if e.estimate == 0:
                    to_start.append(e)
                elif e.size <= free_now:
                    if now + e.estimate <= shadow:
                        to_start.append(e)
                        free_now -= e.size
                    elif e.size <= extra:
                        to_start.append(e)
                        free_now -= e.size
                        extra -= e.size
                if free_now == 0:
                    break
        refused = False
        for e in to_start:
            del queue[e]
            self._account_queued(e, -1)
            if not self._start(e, now):
                refused = True
        if refused and queue:
            self._wake(now)  # the processors counted for a refused copy are still free


class _Region:
    """A region ``[a, b)`` where processors were freed during one compression pass.

    ``cap``: the most processors free at one instant in it (an upper bound once
    regions merged); ``runs``: size → the longest run of that many free
    processors through it (measured lazily, an upper bound afterwards);
    ``far_run``: None while the region is near the reservations being placed,
    else the bound it was moved to the far list with (its one-processor run plus
    the slack). A slotted class: regions are made and read in the grid's
    hottest loop.
    """

    __slots__ = ("a", "b", "cap", "runs", "far_run")

    def __init__(self, a: float, b: float, cap: int) -> None:
        self.a = a
        self.b = b
        self.cap = cap
        self.runs: dict[int, float] = {}
        self.far_run: float | None = None


def _add_region(regions: list[_Region], a: float, b: float, cap: int) -> _Region:
    """Add ``[a, b)`` to sorted disjoint regions, merging those it overlaps or touches; returns the region.

    A region merged into the new one is left with ``cap`` 0: no longer in the list, it offers nothing.
    """
    if not regions or regions[-1].b < a:  # the common case: past every region
        region = _Region(a, b, cap)
        regions.append(region)
        return region
    # New regions land near the end (they start at or after the reservation being processed):
    # walk back past the regions starting after `b`, then over those reaching `a`.
    j = len(regions)
    while j and regions[j - 1].a > b:
        j -= 1
    i = j
    while i and regions[i - 1].b >= a:
        i -= 1
        merged = regions[i]
        if merged.a < a:
            a = merged.a
        if merged.b > b:
            b = merged.b
        if merged.cap > cap:
            cap = merged.cap
        # Retired: the pending list, which may still hold it, drops a region with no room rather
        # than measure what the merged region now covers.
        merged.cap = 0
    region = _Region(a, b, cap)
    regions[i:j] = [region]
    return region


def _longest_first(region: _Region) -> float:
    return -region.far_run  # type: ignore[operator]  # only far regions are sorted


def make_site(policy: str, index: int, processors: int, kernel: Kernel) -> Site:
    """A site with the given queue policy."""
    if policy == "conservative":
        return ConservativeSite(index, processors, kernel)
    if policy == "easy":
        return EasySite(index, processors, kernel, backfill=True)
    if policy == "fcfs":
        return EasySite(index, processors, kernel, backfill=False)
    raise InputError("policy", f"unknown queue policy {policy!r} (choose from {', '.join(POLICIES)})")
