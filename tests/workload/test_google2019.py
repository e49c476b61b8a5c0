"""The Google 2019 converter on fixture shards in BigQuery's JSON-lines export of the v3 schema: every
interpretation (the 2011 lifecycle through 2011's fold, QUEUE/ENABLE, alloc sets, users and priorities from
collection_events, inline constraints and all eight relations, the window's markers, out-of-order events),
the drop report, the JSON reader's two paths (pyarrow and Python's json) and every malformed-row path."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.workload.columnar import read_columnar, read_metadata
from schedlab.workload.convert import convert
from schedlab.workload.converters import common, gather_tables
from schedlab.workload.converters.common import Drops, enum_codes, read_json_shards
from schedlab.workload.converters.google2011 import reference_events
from schedlab.workload.converters.google2019 import (
    AS_2011,
    EVENT_TYPES,
    RELATIONS,
    convert_google2019,
)

from .rawtrace import by_id, convert_fixture, job_fields, simulated_counters, spilled

FIXTURES = Path(__file__).parent / "fixtures" / "google2019"
ROWS = 41 + 272 + 111  # lines of the three fixture shards
PLAIN, EVICTED, NOREQ, ENDS, BEFORE, ORDER, CONS, ALLOC, INALLOC, NOCOLL, SPAN, PRIO, ALLOC2, PEND = range(280000000001, 280000000015)
BIG = 2**53 + 1


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_fixture("google2019", FIXTURES, tmp_path_factory)


_by_id = by_id


def test_the_documented_cases_convert_as_interpreted(converted):
    out, _report, _rows = converted
    jobs = _by_id(out)
    # a normal job: SUBMIT 700 s, QUEUE, ENABLE, SCHEDULE 701 s, FINISH 10/20/30 s later; requests scaled to 64 cores / 16 GB
    j = jobs[PLAIN]
    assert (j.arrival, j.durations, j.mean_duration, j.user, j.priority) == (700.0, [10.0, 20.0, 30.0], 20.0, "uA", 200)
    assert j.requests == [(4.0, 512.0)] * 3 and j.constraints is None and j.task_ids == [0, 1, 2]
    # evicted and resubmitted: the first SUBMIT is the arrival, the last run the duration
    assert (jobs[EVICTED].arrival, jobs[EVICTED].durations) == (800.0, [20.0, 6.0])
    # requests missing (none stated, the CPU only, null): the simulation draws them
    assert jobs[NOREQ].requests is None and jobs[NOREQ].durations == [9.0, 10.0, 11.0]
    # killed, lost, failed, evicted, running: left out; failed and run again: its last run
    assert (jobs[ENDS].task_ids, jobs[ENDS].durations) == ([1, 5], [5.0, 4.0])
    # submitted at time 0 (before the window), finished at 2^63 - 1 (after it): the whole job left out
    assert BEFORE not in jobs
    # out of order in the file: a FINISH before its SCHEDULE, a SCHEDULE before its SUBMIT
    assert (jobs[ORDER].arrival, jobs[ORDER].durations) == (1100.0, [14.0, 18.0])
    # all eight relations, by code and by name; an empty EQUAL is absent, an empty NOT_EQUAL present; restated
    # constraints kept once; UPDATE_PENDING raised instance 2's request before it ran
    j = jobs[CONS]
    assert j.constraints == [
        (("a1", "=", "v1"), ("a2", ">", "3")),
        (("a3", "present", ""), ("a4", "<", "10"), ("a5", "<=", "4"), ("a6", ">=", "2")),
        (("a7", "absent", ""), ("a8", "present", ""), ("a9", "absent", ""), ("a10", "!=", "v10")),
    ]
    assert j.requests[2] == (16.0, 2048.0)
    # an alloc set's instances (by its collection_events row, or by their own rows) are not tasks; a job in one is
    assert not {ALLOC, ALLOC2} & set(jobs) and jobs[INALLOC].durations == [10.0]
    # no collection_events row: kept, no user; the instance's own priority
    assert (jobs[NOCOLL].user, jobs[NOCOLL].priority, jobs[NOCOLL].durations) == (None, 25, [9.0, 19.0])
    # events in both shards; the constraint restated in the second is kept once
    assert jobs[SPAN].durations == [99.0] and jobs[SPAN].constraints == [(("a1", "!=", "v1"),)]
    # no priority on the instance's rows: its collection's last stated
    assert jobs[PRIO].priority == 360
    # a 64-bit collection ID no double holds, and a BigQuery-style user hash
    assert jobs[BIG].user == "9ZgeGjd2xZ8PAFGtfvJ4Z0ThRjsRcwRcBfCcGl9PPA0=" and jobs[BIG].durations == [40.0]
    assert PEND not in jobs  # pending at the end
    assert list(jobs) == sorted(jobs, key=lambda k: (jobs[k].arrival, k))  # arrival order
    assert len(jobs) == 11 + 16


def test_what_was_left_out_is_reported_by_reason(converted):
    out, report, rows = converted
    assert report.tasks_dropped == {
        "finished after the trace window": 1,
        "submitted before the trace window": 1,
        "evicted and not run again": 1,
        "failed and not run again": 1,
        "killed and not run again": 1,
        "lost and not run again": 1,
        "unfinished at the trace's end": 2,
        "alloc set instances (reservations, not tasks)": 3,
    }
    c = report.counts
    assert (c["events_out_of_order"], c["alloc_set_instance_events"], c["collections_without_collection_events"], c["tasks_without_collection_events"]) == (1, 15, 1, 2)
    assert (c["collection_events"], c["collections"]) == (41, 29)
    assert (c["constraints_stated"], c["constraint_rows"], c["tasks_constrained"], c["constraint_rows_of_dropped_tasks"]) == (124, 23, 16, 0)
    assert report.rows_read == rows == ROWS and not report.bad_rows
    meta = read_metadata(out)
    assert meta["source"] == "google2019" and meta["resources"] == ["cores", "memory_mb"]


def _fixture_rows():
    """The fixtures read with Python's json, independently of the converter."""
    colls = {int(r["collection_id"]): r for r in _lines(FIXTURES / "collection_events-000000000000.json.gz")}
    rows = [*_lines(FIXTURES / "instance_events-000000000000.json.gz"), *_lines(FIXTURES / "instance_events-000000000001.json.gz")]
    return colls, rows


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def test_the_conversion_is_2011s_definition_over_the_mapped_events(converted):
    out, report, _rows = converted
    colls, rows = _fixture_rows()
    events = []
    for r in rows:
        cid = int(r["collection_id"])
        if r["collection_type"] == "1" or colls.get(cid, {}).get("collection_type") == "1":
            continue
        rr = r.get("resource_request") or {}
        events.append((int(r["time"]), (cid, int(r["instance_index"])), int(AS_2011[int(r["type"])]), 0, float(r.get("priority", "nan")),
                       rr.get("cpus", np.nan), rr.get("memory", np.nan)))  # fmt: skip
    drops = Drops()
    done, tally = reference_events(events, drops)
    want = {k: t - 0 for k, _a, t, *_ in done}  # (collection, instance) -> duration in µs
    got = {(j.job_id, i): d for j in read_columnar(out) for i, d in zip(j.task_ids, j.durations, strict=True)}
    assert got == {k: d / 1e6 for k, d in want.items()}
    assert {k: v for k, v in report.tasks_dropped.items() if not k.startswith("alloc")} == drops.counts
    assert (report.counts["runs_ended_early"], report.counts["events_out_of_order"]) == (tally.ended_early, tally.out_of_order)


def test_normalised_requests_and_bounded_memory_sorting(converted, tmp_path):
    out, _report, _rows = converted
    norm = tmp_path / "n.parquet"
    convert("google2019", [FIXTURES], norm, scale_requests=False)
    assert read_metadata(norm)["resources"] == ["cpus", "memory"] and _by_id(norm)[PLAIN].requests == [(0.0625, 0.03125)] * 3
    assert job_fields(spilled(convert_google2019, "google2019", FIXTURES, tmp_path, run_rows=3)) == job_fields(out)


def test_a_converted_trace_runs_with_its_own_requests(converted):
    out, report, _rows = converted
    c = simulated_counters(out, report)
    assert c["tasks_request_drawn"] == 3  # NOREQ's three tasks


# -- how the JSON is written -----------------------------------------------------------------------
def _rewrite(src: Path, dst: Path, change) -> None:
    """The fixture tree with every row changed by ``change(row, line index)``."""
    for p in [q for q in src.glob("*.json.gz") if not q.name.startswith("machine_")]:  # the task tables
        rows = _lines(p)
        text = "".join(json.dumps(change(r, k)) + "\n" for k, r in enumerate(rows))
        (dst / p.name).write_bytes(gzip.compress(text.encode()))


def _as_numbers(row, _k):
    """INT64 as JSON numbers, the enumerations by name."""
    out = {}
    for k, v in row.items():
        if k == "constraint":
            v = [{**c, "relation": RELATIONS[int(c["relation"])]} if c["relation"].isdigit() else c for c in v]
        elif k == "type":
            v = EVENT_TYPES[int(v)]
        elif isinstance(v, str) and v.isdigit() and k not in ("user", "collection_name", "collection_logical_name"):
            v = int(v)
        out[k] = v
    return out


@pytest.mark.parametrize(
    "how",
    [
        "numbers",  # every INT64 a JSON number, event types and relations by name: pyarrow reads it as numbers
        "mixed",  # every other row so: the blocks go through Python's json
        "nulls",  # null written out for what is missing (BigQuery leaves it out); blank lines between rows
        "python",  # pyarrow never used: Python's json reads every block
    ],
)
def test_the_ways_to_write_the_json_read_the_same(converted, tmp_path, monkeypatch, how):
    out, report, _rows = converted
    src = tmp_path / "src"
    src.mkdir()
    if how == "numbers":
        _rewrite(FIXTURES, src, _as_numbers)
    elif how == "mixed":
        _rewrite(FIXTURES, src, lambda r, k: _as_numbers(r, k) if k % 2 else r)
    elif how == "nulls":
        _rewrite(FIXTURES, src, lambda r, _k: {**{f: None for f in ("machine_id", "priority", "resource_request", "constraint")}, **r})
        for p in src.glob("instance*"):
            p.write_bytes(gzip.compress(gzip.decompress(p.read_bytes()).replace(b"\n", b"\n  \n")))
    else:
        import pyarrow.json as pj

        def refuse(*_a, **_k):
            raise pa.ArrowInvalid("no pyarrow here")

        monkeypatch.setattr(pj, "read_json", refuse)
        _rewrite(FIXTURES, src, lambda r, _k: r)
    slow = []
    by_python = common._json_lines
    monkeypatch.setattr(common, "_json_lines", lambda *a: slow.append(a[0].name) or by_python(*a))
    again = tmp_path / "again.parquet"
    rep = convert("google2019", [src], again)
    assert len(slow) == (0 if how in ("numbers", "nulls") else 3)  # one block per shard
    assert job_fields(again) == job_fields(out)
    assert (rep.tasks_dropped, rep.counts, rep.rows_read) == (report.tasks_dropped, report.counts, report.rows_read)


def test_the_json_reader_follows_how_each_block_writes_a_field(tmp_path):
    schema = pa.schema([("t", pa.int64()), ("x", pa.float64()), ("s", pa.string()), ("l", pa.list_(pa.struct([("r", pa.string())])))])
    p = tmp_path / "t.json"
    lines = [json.dumps({"t": str(k), "x": 0.5, "s": "a", "l": [{"r": "EQUAL"}]}) for k in range(200)]
    lines += [json.dumps({"t": k, "x": "1.5", "s": 7, "l": [{"r": 3}]}) for k in range(200, 400)]
    p.write_text("\n".join(lines))  # no newline at the end
    batches = list(read_json_shards([p], schema, skip_bad=False, bad_rows=Drops(), block_bytes=4096))
    assert len(batches) > 4
    t = np.concatenate([b["t"].to_numpy() for b in batches])
    assert t.tolist() == list(range(400)) and [b.line(0) for b in batches] == sorted(b.line(0) for b in batches)
    last = batches[-1]
    assert last["x"][0].as_py() == 1.5 and last["s"][0].as_py() == "7" and last["l"][0].as_py() == [{"r": "3"}]
    assert last.line(len(last["t"]) - 1) == 400
    codes, null = enum_codes(pa.array(["3", "LESS_THAN", "less_than_equal", None, "NOPE", "-1", "99999999999999999999"]), RELATIONS)
    assert codes.tolist() == [3, 2, 4, -1, -1, -1, -1] and null.tolist() == [False, False, False, True, False, False, False]
    assert enum_codes(pa.array([1, None], pa.int64()), RELATIONS)[0].tolist() == [1, -1]


# -- malformed rows --------------------------------------------------------------------------------
def test_the_malformed_fixture_is_named_or_skipped_and_counted(tmp_path):
    shard = FIXTURES / "malformed" / "instance_events-000000000000.json.gz"
    with pytest.raises(InputError, match=rf"^{shard}:3: not valid JSON"):
        convert("google2019", [FIXTURES / "malformed"], tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()
    report = convert("google2019", [FIXTURES / "malformed"], tmp_path / "o.parquet", skip_bad=True)
    assert report.bad_rows == {"rows that are not JSON objects": 1, "rows with a malformed value": 1, "rows with an unknown event type": 1}
    assert report.tasks == 1 and next(read_columnar(tmp_path / "o.parquet")).durations == [10.0]


def _row(t, typ, idx=0, **kw):
    return {"time": str(t), "type": str(typ), "collection_id": "7", "collection_type": "0", "priority": "9", "instance_index": str(idx),
            "resource_request": {"cpus": 0.1, "memory": 0.1}, **kw}  # fmt: skip


def _shards(folder: Path, instance_lines: list[str], collection_lines: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    coll = collection_lines if collection_lines is not None else [json.dumps({"time": "700000000", "type": "0", "collection_id": "7", "user": "u"})]
    (folder / "collection_events-000000000000.json.gz").write_bytes(gzip.compress(("\n".join(coll) + "\n").encode()))
    p = folder / "instance_events-000000000000.json.gz"
    p.write_bytes(gzip.compress(("\n".join(instance_lines) + "\n").encode()))
    return p


GOOD = [_row(700_000_000, 0), _row(701_000_000, 3)]
END = _row(709_000_000, 6)
BAD_ROWS = [
    ("bad JSON", '{"time": "700000000", "type": ', "not valid JSON"),
    ("not an object", "[1, 2]", "not a JSON object"),
    ("time not an integer", json.dumps(_row("7e8", 1)), "time is not an integer: '7e8'"),
    ("time past 64 bits", json.dumps(_row(2**63, 1)), "time is not an integer"),
    ("time missing", json.dumps({k: v for k, v in _row(0, 1).items() if k != "time"}), "time is missing"),
    ("collection missing", json.dumps({**_row(700_000_000, 1), "collection_id": None}), "collection_id is missing"),
    ("unknown event type", json.dumps(_row(700_000_000, 11)), "collection 7 instance 0: unknown event type 11"),
    ("unknown event name", json.dumps(_row(700_000_000, "FINISHED")), "unknown event type 'FINISHED'"),
    ("unknown collection type", json.dumps({**_row(700_000_000, 1), "collection_type": "2"}), "unknown collection type 2"),
    ("negative instance index", json.dumps(_row(700_000_000, 1, idx=-2)), "instance indices in [0, 2^24)"),
    ("instance index too large", json.dumps(_row(700_000_000, 1, idx=1 << 24)), "instance indices in [0, 2^24)"),
    ("request not a number", json.dumps({**_row(700_000_000, 1), "resource_request": {"cpus": "lots"}}), "resource_request.cpus is not a number: 'lots'"),
    ("request not an object", json.dumps({**_row(700_000_000, 1), "resource_request": 3}), "resource_request is not an object"),
    ("unknown relation", json.dumps(_row(700_000_000, 1, constraint=[{"name": "a", "value": "1", "relation": "9"}])), "unknown constraint relation 9"),
    ("relation missing", json.dumps(_row(700_000_000, 1, constraint=[{"name": "a", "value": "1"}])), "unknown constraint relation None"),
    ("comparison without a value", json.dumps(_row(700_000_000, 1, constraint=[{"name": "a", "relation": "LESS_THAN"}])), "constraint a LESS_THAN needs a value"),
    ("constraint without a name", json.dumps(_row(700_000_000, 1, constraint=[{"value": "1", "relation": "0"}])), "a constraint has no name"),
    ("constraint not a list", json.dumps(_row(700_000_000, 1, constraint={"name": "a"})), "constraint is not a list"),
]


@pytest.mark.parametrize(("line", "expect"), [(b, e) for _n, b, e in BAD_ROWS], ids=[n for n, _b, _e in BAD_ROWS])
def test_a_malformed_row_is_named_by_file_and_line_or_skipped_and_counted(tmp_path, line, expect):
    shard = _shards(tmp_path / "t", [json.dumps(GOOD[0]), "", json.dumps(GOOD[1]), line, json.dumps(END)])  # line 2 is blank
    with pytest.raises(InputError) as e:
        convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet")
    assert str(e.value).startswith(f"{shard}:4: ") and expect in str(e.value)
    assert not (tmp_path / "o.parquet").exists()
    report = convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert sum(report.bad_rows.values()) == 1 and report.tasks == 1
    job = next(read_columnar(tmp_path / "o.parquet"))
    assert (job.job_id, job.user, job.priority, job.durations) == (7, "u", 9, [8.0])


def test_malformed_collection_rows(tmp_path):
    good = json.dumps({"time": "700000000", "type": "0", "collection_id": "7", "user": "u"})
    bad = json.dumps({"time": "700000000", "type": "SUBMIT", "collection_id": "-7", "user": "v"})
    _shards(tmp_path / "t", [*map(json.dumps, GOOD), json.dumps(END)], [good, bad])
    with pytest.raises(InputError, match=r"collection_events-000000000000.json.gz:2: collection -7: times and collection IDs must be >= 0"):
        convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet")
    report = convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet", skip_bad=True)
    assert report.bad_rows == {"rows with an impossible time, collection ID or instance index": 1}


def test_a_collections_last_stated_fields_count(tmp_path):
    rows = [{"time": "700000000", "type": "0", "collection_id": "7", "priority": "5"},  # no user yet
            {"time": "700000001", "type": "9", "collection_id": "7", "user": "late", "priority": "6"},
            {"time": "700000002", "type": "3", "collection_id": "7"}]  # fmt: skip
    instance = [{k: v for k, v in r.items() if k != "priority"} for r in (*GOOD, END)]
    _shards(tmp_path / "t", [*map(json.dumps, instance)], [*map(json.dumps, rows)])
    convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet")
    job = next(read_columnar(tmp_path / "o.parquet"))
    assert (job.user, job.priority) == ("late", 6)


def test_inputs_are_sorted_into_tables_or_refused(tmp_path):
    named = tmp_path / "named"
    named.mkdir()
    for f in ("instance_events-000000000000.json.gz", "collection_events-000000000000.json.gz", "machine_events-000000000000.json.gz",
              "machine_attributes-000000000000.json.gz", "README.md"):  # fmt: skip
        (named / f).write_bytes(b"")
    tables = gather_tables("google2019", [named])
    assert {t: [p.name for p in ps] for t, ps in tables.items()} == {
        "collection_events": ["collection_events-000000000000.json.gz"],
        "instance_events": ["instance_events-000000000000.json.gz"],
        "machine_events": ["machine_events-000000000000.json.gz"],
        "machine_attributes": ["machine_attributes-000000000000.json.gz"],
    }
    with pytest.raises(InputError, match="no collection_events shards"):
        gather_tables("google2019", [FIXTURES / "instance_events-000000000000.json.gz"])
    shards = gather_tables("google2019", [FIXTURES / "instance_events-000000000001.json.gz", FIXTURES])
    assert [p.name for p in shards["instance_events"]] == ["instance_events-000000000000.json.gz", "instance_events-000000000001.json.gz"]


def test_unreadable_shards_and_nothing_kept(tmp_path):
    p = _shards(tmp_path / "t", [json.dumps(GOOD[0])])
    with pytest.raises(InputError, match=r"no task of the google2019 input could be kept \(unfinished at the trace's end: 1\)"):
        convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet")
    p.write_bytes(gzip.compress(b"{}\n" * 1000)[:-20])  # cut short
    with pytest.raises(InputError, match=rf"^{p}: unreadable data"):
        convert("google2019", [tmp_path / "t"], tmp_path / "o.parquet")


def test_cli(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert main(["trace", "convert", "--format", "google2019", str(FIXTURES), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "wrote 27 jobs (" in err and "alloc set instances (reservations, not tasks): 3" in err
    assert main(["trace", "convert", "--format", "google2019", str(FIXTURES), "--out", str(tmp_path / "g.tr")]) == 2
    assert "converts to the columnar format only" in capsys.readouterr().err
