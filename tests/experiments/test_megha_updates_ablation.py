"""megha-updates-ablation: the update modes run, and the analysis computes its verdicts from the runs."""

from __future__ import annotations

import itertools
import json

import pytest

import schedlab
from schedlab.errors import InputError
from schedlab.experiments.reproduce import reproduce
from schedlab.workload.trace import read_trace


def test_quick_ablation_end_to_end(tmp_path):
    reproduce("megha-updates-ablation", tmp_path / "r", quick=True, jobs=1)
    doc = json.loads((tmp_path / "r" / "analysis" / "claims.json").read_text())
    assert {c["updates"] for c in doc["cells"]} == {"delta", "snapshot", "delta+own", "delta+own-unguarded"}
    assert {c["costs"] for c in doc["cells"]} == {"none", "paper"}
    assert doc["claims"] and {c["holds"] for c in doc["claims"]} <= {"yes", "no"}


def test_own_completions_in_deltas_grow_the_updates_and_without_the_guard_the_inconsistencies():
    jobs = list(itertools.islice(read_trace("syn_1000"), 60))
    s = {u: schedlab.simulate("megha", jobs, trace_label="syn_1000", config="reference", seed=1, params={"updates": u}).summary
         for u in ("delta", "delta+own", "delta+own-unguarded")}
    c = {u: s[u]["counters"] for u in s}
    assert c["delta+own"]["state_update_entries"] > c["delta"]["state_update_entries"]
    assert c["delta+own"]["inconsistencies"] == c["delta"]["inconsistencies"]  # the own-task guard already prevents it
    assert c["delta+own-unguarded"]["inconsistencies"] > c["delta"]["inconsistencies"]
    assert all(s[u]["counters"]["tasks_unfinished"] == 0 for u in s)


def test_own_completion_modes_are_slot_mode_only():
    with pytest.raises(InputError, match="slot-mode only"):
        schedlab.simulate("megha", list(itertools.islice(read_trace("google"), 5)), trace_label="google", workers=1000,
                          resource_mode="multi", params={"updates": "delta+own"})
