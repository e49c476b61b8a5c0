"""The services' own code under deterministic simulation with injected faults (FoundationDB-style).

``schedlab dst --seeds N`` runs N seeded fault schedules of a small Megha
cluster — every GM, LM and worker host the very node a real process runs
(:mod:`schedlab.services.assembly`), on the discrete-event kernel, over an
in-memory network and broker that delay, drop, cut and restart
(:mod:`schedlab.services.memnet`) — checks after each the invariants the chaos
campaigns check (:mod:`.invariants`), and shrinks a failing schedule to a
minimal one with the command that replays it (:mod:`.search`).
"""

from schedlab.services.dst.faults import Fault, parse_schedule, schedule_text
from schedlab.services.dst.invariants import INVARIANTS, check
from schedlab.services.dst.search import (
           Schedule,
           Summary,
           Verdict,
           run,
           schedule_for,
           search,
           shrink,
)
from schedlab.services.dst.world import Setup

__all__ = ["INVARIANTS", "Fault", "Schedule", "Setup", "Summary", "Verdict", "check", "parse_schedule", "run", "schedule_for",
           "schedule_text", "search", "shrink"]
