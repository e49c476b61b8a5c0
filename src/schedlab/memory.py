"""Refusing, up front, a run that cannot fit in this machine's memory.

A data center of 10⁹ workers, or a grid workload of 10¹⁰ jobs, would otherwise
get minutes into building its arrays and die with a NumPy ``MemoryError``
traceback — or be killed by the kernel. :func:`check_fits` compares a lower
bound of what the run will hold (a measured cost per item, times the count)
with the memory available now (``MemAvailable`` on Linux, else physical
memory) and raises :class:`~schedlab.errors.InputError` naming the option.

The per-item costs are lower bounds measured on this project's runs (see the
constants); a run that passes may still be too large — the check only refuses
what certainly is.
"""

from __future__ import annotations

import os

from schedlab.errors import InputError

# Peak memory per worker of a simulated data center: measured 240 bytes for the
# cheapest run (ideal, slot mode, with machine constraints, 10^6 workers: 375 MB
# against 133 MB for 10^3); half of that is the lower bound. Megha in
# multi-resource mode holds several times more.
BYTES_PER_WORKER = 120
# A grid job held in memory (arrival, size, runtime, estimate, site, queue records).
BYTES_PER_GRID_JOB = 200

_GIB = 1 << 30


def available_bytes() -> int | None:
    """Memory available to a new allocation now (None if the platform does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(option: str, count: int, bytes_each: int, what: str) -> None:
    """Refuse ``count`` items of at least ``bytes_each`` bytes if they cannot fit in the available memory."""
    need = count * bytes_each
    have = available_bytes()
    if have is not None and need > have:
        raise InputError(option, f"{count:,} {what} need at least {need / _GIB:,.1f} GiB of memory; "
                                 f"this machine has {have / _GIB:,.1f} GiB available")
