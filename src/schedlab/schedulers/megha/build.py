"""Megha's masters built once, for every runtime: which GM and LM classes, with which random streams.

The simulator (:class:`~schedlab.schedulers.megha.MeghaScheduler`), the
embedded cluster and every service process (:mod:`schedlab.services.assembly`)
build their Global and Local Masters here, so a GM draws the same numbers from
the same named stream (``megha:gm:<g>``) wherever it runs, and the authors'
profile (``compat="authors"``) swaps the same classes everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab.schedulers.megha.compat import AuthorsGM, AuthorsLM
from schedlab.schedulers.megha.gm import GlobalMaster
from schedlab.schedulers.megha.lm import LocalMaster

if TYPE_CHECKING:
    from schedlab.schedulers.megha import MeghaShared


def gm_stream(g: int) -> str:
    """The name of GM ``g``'s random stream (worker choice)."""
    return f"megha:gm:{g}"


def build_gm(g: int, shared: MeghaShared) -> GlobalMaster:
    """Global Master ``g`` on ``shared``'s runtime."""
    cls = AuthorsGM if shared.params.compat == "authors" else GlobalMaster
    return cls(g, shared, shared.runtime.rng(gm_stream(g)))


def build_lm(i: int, shared: MeghaShared) -> LocalMaster:
    """Local Master ``i`` on ``shared``'s runtime."""
    cls = AuthorsLM if shared.params.compat == "authors" else LocalMaster
    return cls(i, shared)
