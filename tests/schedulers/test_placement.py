"""Worker choice as an extension point: one policy object, by name, for every scheduler that chooses a worker.

A policy that is not built in — here "most-constraints", the candidate with the
*most* machine constraints, the opposite of the papers' best fit — is installed
the way pip leaves a package (a module and a dist-info naming its entry point in
``schedlab.worker_choices``) and given by name to ideal, centralized, Pigeon
and Megha (by partition and across a group): each consults it, and each still
meets the scheduler contract with it.
"""

from __future__ import annotations

import random
import sys
import textwrap

import pytest

from schedlab import simulate
from schedlab.cluster import Cluster
from schedlab.errors import InputError
from schedlab.schedulers import placement, registry
from schedlab.testing import check_scheduler
from schedlab.workload.trace import TraceJob

PLUGIN = textwrap.dedent('''
    from schedlab.schedulers.placement import WorkerChoice

    class MostConstraints(WorkerChoice):
        name = "most-constraints"
        calls = 0

        def pick(self, cand):
            type(self).calls += 1
            return (cand & -cand).bit_length() - 1  # the lowest position: the most machine constraints
''')


@pytest.fixture
def most_constraints(tmp_path):
    site = tmp_path / "site"
    info = site / "choice_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "choice_plugin.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: choice-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[schedlab.worker_choices]\nmost-constraints = choice_plugin:MostConstraints\n")
    sys.path.insert(0, str(site))
    try:
        cls = placement.choice_class("most-constraints")
        cls.calls = 0
        yield cls
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("choice_plugin", None)


def test_the_built_in_choices_are_the_papers():
    rng = random.Random(1)
    assert placement.choice_names()[:2] == ["min-constraints", "random"]
    assert placement.worker_choice("min-constraints", rng).pick(0b10110) == 4  # the highest: the fewest constraints
    picks = {placement.worker_choice("random", random.Random(s)).pick(0b10110) for s in range(40)}
    assert picks == {1, 2, 4}
    free = [(1.0,), (0.0,), (1.0,), (0.2,)]
    assert placement.worker_choice("min-constraints", rng).fit(0b1111, free, (0.5,)) == 2
    assert {placement.worker_choice("random", random.Random(s)).fit(0b1111, free, (0.5,)) for s in range(40)} == {0, 2}
    # across groups: the fewest constraints wins, the first group on a tie
    assert placement.worker_choice("min-constraints", rng).pick_across([(7, 0b1), (8, 0b10)], lambda g, pos: 3 if g == 7 else 2) == (8, 1)


def test_an_unknown_choice_is_one_line_naming_the_parameter():
    with pytest.raises(InputError) as e:
        registry.parse_params(registry.get("megha"), {"worker_choice": "best"})
    assert str(e.value) == "param worker_choice: Input should be 'min-constraints' or 'random', got 'best'"


@pytest.mark.parametrize("scheduler", ["ideal", "centralized", "pigeonc", "megha"])
def test_a_plugin_policy_is_consulted_by_every_scheduler_and_keeps_the_contract(most_constraints, scheduler):
    report = check_scheduler(scheduler, {"worker_choice": "most-constraints"})
    assert report.tasks > 0 and report.modes == (["slots"] if scheduler == "pigeonc" else ["slots", "multi-resource"])
    assert most_constraints.calls > 0


def test_megha_with_a_plugin_policy_across_a_group(most_constraints):
    # 1 GM, 2 LMs: LM 0's partition w0..w3 (three constraints each), LM 1's w4..w7 (none); one unconstrained task
    masks = [0b111] * 4 + [0] * 4
    one = [TraceJob(0.0, 10.0, [10.0])]
    for scope, where in (("group", range(4)), ("partition", range(4))):
        r = simulate("megha", one, cluster=Cluster.slots(masks), constraints=False,
                     params={"gms": 1, "lms": 2, "choice_scope": scope, "worker_choice": "most-constraints"})
        assert r.tasks.worker.iloc[0] in where, scope
    r = simulate("megha", one, cluster=Cluster.slots(masks), constraints=False,
                 params={"gms": 1, "lms": 2, "choice_scope": "group", "worker_choice": "min-constraints"})
    assert r.tasks.worker.iloc[0] in range(4, 8)


def test_a_plugin_policy_places_where_it_says(most_constraints):
    choice = placement.worker_choice("most-constraints", random.Random(0))
    assert choice.pick(0b10110) == 1
    free = [(1.0,), (0.0,), (1.0,), (0.2,)]
    assert choice.fit(0b1111, free, (0.5,)) == 0  # among those with room, its own pick
    assert choice.pick_across([(7, 0), (8, 0b100)], lambda g, pos: 0) == (8, 2)
    assert not choice.native and choice.draw is None
