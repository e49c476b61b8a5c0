"""Configs of the papers' data centers, generated data centers, topology helpers."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from schedlab.cluster import (
    Cluster,
    generate_machine_masks,
    load_config,
    split_federated,
    split_groups,
)
from schedlab.cluster.generate import machine_constraint_percent
from schedlab.errors import InputError


def test_reference_configs_hold_the_same_10000_workers():
    megha = load_config("reference")
    pigeon = load_config("reference-pigeon")
    assert megha.n == pigeon.n == 10000
    assert megha.topology.num_clusters == 5 and megha.topology.num_partitions == 5
    assert all(len(p) == 400 for p in megha.topology.groups)
    assert len(pigeon.topology.groups) == 100 and pigeon.extra["FQW"] == 20 and pigeon.extra["cutoff"] == 2
    assert megha.machine_masks == pigeon.machine_masks
    # every worker satisfies constraint 20 (sharma_constraints.json)
    assert all(m >> 20 & 1 for m in megha.machine_masks)


def test_config_bits_read_left_to_right(tmp_path):
    vecs = ["0b10"] + ["0b00"] * 19 + ["0b01"]
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"LMs": {"1": {"partitions": {"1": vecs}}}}))
    cl = load_config(p)
    assert cl.machine_masks == [1 << 0, 1 << 20]


def _megha(vecs_by_partition):
    return {"LMs": {"1": {"LM_id": "1", "partitions": {str(i + 1): v for i, v in enumerate(vecs_by_partition)}}}}


@pytest.mark.parametrize(
    ("content", "where", "what"),
    [
        ("{not json", "c.json:1", "invalid JSON"),
        (json.dumps([1, 2]), "c.json", "JSON object"),
        (json.dumps({"foo": 1}), "c.json", "unknown config layout"),
        (json.dumps(_megha([["0b1"] * 20])), "LMs.1.partitions.1", "list of 21"),
        (json.dumps(_megha([["0b1"] * 20 + ["0b2"]])), "LMs.1.partitions.1[20]", "not a bit string"),
        (json.dumps(_megha([["0b1"] * 20 + ["0b11"]])), "LMs.1.partitions.1[20]", "has 2 bits"),
        (json.dumps({"LMs": {"1": {"partitions": {"2": ["0b1"] * 21}}}}), "LMs.1.partitions", "keys must be 1..1"),
        (json.dumps({"LMs": {"1": {"x": 1}}}), "LMs.1", "missing field 'partitions'"),
        (json.dumps({"workers": {"1": ["0b1"] * 21}, "FQW": -3}), "FQW", "non-negative"),
        (json.dumps({"workers": {"1": ["0b1"] * 21}, "num_masters": 4}), "num_masters", "has 1 groups"),
    ],
)
def test_bad_configs_name_the_field(tmp_path, content, where, what):
    p = tmp_path / "c.json"
    p.write_text(content)
    with pytest.raises(InputError) as e:
        load_config(p)
    assert where in str(e.value) and what in str(e.value)


def test_missing_and_compressed_configs(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_config(tmp_path / "nope.json")
    p = tmp_path / "c.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump({"workers": {"1": ["0b01"] * 21}}, f)
    assert load_config(p).n == 2


def test_generated_machine_constraints_follow_the_frequencies():
    masks = np.array(generate_machine_masks(40000, np.random.default_rng(1)))
    freq = np.array([((masks >> c) & 1).mean() for c in range(21)]) * 100
    assert np.allclose(freq, machine_constraint_percent(), atol=1.0)
    again = generate_machine_masks(100, np.random.default_rng(1))
    assert again == generate_machine_masks(100, np.random.default_rng(1))


def test_reference_model_resamples_real_constraint_sets():
    ref = set(load_config("reference").machine_masks)
    masks = generate_machine_masks(500, np.random.default_rng(2), "reference")
    assert set(masks) <= ref
    with pytest.raises(InputError, match="unknown model"):
        generate_machine_masks(5, np.random.default_rng(2), "bogus")


def test_topology_splits():
    t = split_federated(10, 2, 3)
    assert [len(p) for p in t.groups] == [2, 2, 1, 2, 2, 1]
    assert sorted(w for g in t.groups for w in g) == list(range(10))
    assert t.cluster_workers(1) == (5, 6, 7, 8, 9)
    g = split_groups(7, 3)
    assert [len(x) for x in g.groups] == [3, 2, 2]
    with pytest.raises(InputError, match="cannot fill"):
        split_federated(5, 2, 3)
    with pytest.raises(InputError, match="at least 1"):
        split_groups(5, 0)
    with pytest.raises(InputError):
        Cluster.slots([0, 0]).with_topology(split_groups(3, 1))


def test_multi_resource_cluster():
    cl = Cluster.multi_resource([0] * 3, (64, 16384))
    assert not cl.slot_mode and cl.total_capacity().tolist() == [192, 49152]
    with pytest.raises(InputError):
        Cluster.multi_resource([0] * 3, (64,))
    with pytest.raises(InputError):
        Cluster([])
