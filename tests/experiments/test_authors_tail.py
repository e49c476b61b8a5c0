"""The authors'-profile tail over seeds: the spread and the "inside?" cells are computed from the runs."""

from __future__ import annotations

import pandas as pd

from schedlab.experiments.authors_tail import analyse, markdown


def test_spread_over_seeds_and_whether_the_authors_run_lies_inside():
    rows = [{"scheduler": "authors_random", "seed": s, "jrt_delay.mean": m, "jrt_delay.p99": p, "jrt_delay.max": x,
             "counters.inconsistencies": 10 * s}
            for s, (m, p, x) in enumerate([(0.2, 0.9, 250.0), (0.5, 2.0, 900.0), (1.1, 3.0, 1200.0)])]
    rows += [{"scheduler": "without_discarded_update", "seed": s, "jrt_delay.mean": 0.01, "jrt_delay.p99": 0.002,
              "jrt_delay.max": 5.0, "counters.inconsistencies": 1} for s in range(3)]
    s = analyse(pd.DataFrame(rows))
    a, w = s["rows"]
    assert a["mean"]["low"] == 0.2 and a["mean"]["median"] == 0.5 and a["mean"]["high"] == 1.1
    assert a["mean"]["authors_inside"] and a["mean"]["seeds_at_or_below_authors"] == 1  # theirs: 0.257
    assert a["max"]["authors_inside"] and a["max"]["seeds_at_or_below_authors"] == 1  # theirs: 300
    assert not w["p99"]["authors_inside"] and w["p99"]["seeds_at_or_below_authors"] == 3
    md = markdown(s)
    assert "| authors_random | 3 | 0.2 / 0.5 / 1.1 | yes (1/3) |" in md and "| without_discarded_update | 3 |" in md
