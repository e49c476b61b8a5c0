"""The MMPP-2 generator hits the target mean and SCV within 5 % and the index of dispersion within
20 % on long samples, for the paper's weak and strong bursty targets and our reading of
the free parameter, and for the balanced fit; impossible targets are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.grid.workload import ARRIVAL_PRESETS, BURSTY_HIGH_STATE_SHARE, parse_arrivals
from schedlab.workload.arrivals import fit_mmpp2, index_of_dispersion, scv_of


@pytest.mark.parametrize("share", [BURSTY_HIGH_STATE_SHARE, 0.02, 0.5])
@pytest.mark.parametrize("idc", [55.0, 384.0])
def test_fit_is_exact(idc, share):
    m = fit_mmpp2(10.0, 20.0, idc, share)
    assert m.mean == pytest.approx(10.0, rel=1e-9)
    assert m.scv == pytest.approx(20.0, rel=1e-6)
    assert m.idc == pytest.approx(idc, rel=1e-9)
    assert m.pi[0] == pytest.approx(share, rel=1e-9)


@pytest.mark.parametrize("preset, idc", [("weak", 55.0), ("strong", 384.0)])
def test_long_sample_hits_targets(preset, idc):
    arr = parse_arrivals(preset)
    # Long enough for the slow switching of the strong case (a cycle holds ~230 arrivals).
    x = arr.interarrivals(3_000_000, np.random.default_rng(20240611))
    assert x.mean() == pytest.approx(10.0, rel=0.05)
    assert scv_of(x) == pytest.approx(20.0, rel=0.05)
    assert index_of_dispersion(x, windows=300) == pytest.approx(idc, rel=0.20)


def test_balanced_fit_sample():
    m = fit_mmpp2(10.0, 20.0, 55.0)
    x = m.sample(2_000_000, np.random.default_rng(7))
    assert x.mean() == pytest.approx(10.0, rel=0.05)
    assert scv_of(x) == pytest.approx(20.0, rel=0.05)
    assert index_of_dispersion(x, windows=300) == pytest.approx(55.0, rel=0.20)


def test_non_bursty_is_poisson():
    x = parse_arrivals("non-bursty").interarrivals(500_000, np.random.default_rng(3))
    assert x.mean() == pytest.approx(10.0, rel=0.02)
    assert scv_of(x) == pytest.approx(1.0, rel=0.02)
    assert index_of_dispersion(x) == pytest.approx(1.0, rel=0.2)


def test_bursts_are_dense_at_the_delay_scale():
    # Our reading of the free parameter: bursts fall within the 1 s submission delay.
    m = parse_arrivals("strong").mmpp
    assert 1.0 / m.r1 < 1.0 and m.lam1 / m.r1 > 100
    assert ARRIVAL_PRESETS["strong"].endswith(str(BURSTY_HIGH_STATE_SHARE))


@pytest.mark.parametrize(
    "spec, where",
    [
        ("mmpp:10,20,15", "mmpp"),  # SCV above IDC
        ("mmpp:10,0.5,55", "mmpp.scv"),
        ("mmpp:10,20,55,1.5", "mmpp.high_state_fraction"),
        ("mmpp:10,20", "arrivals"),
        ("constant:1", "arrivals"),
        ("bursty", "arrivals"),
    ],
)
def test_bad_arrival_specs(spec, where):
    with pytest.raises(InputError) as e:
        parse_arrivals(spec)
    assert e.value.where == where
