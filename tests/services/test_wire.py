"""The wire form: every message round-trips, and every kind of bad input is one clear WireError."""

from __future__ import annotations

import asyncio
import json

import pytest

from schedlab import simulate
from schedlab.cluster import Cluster
from schedlab.schedulers.megha.messages import LaunchRejected, LaunchRequest, StateUpdate
from schedlab.services.client import replay
from schedlab.services.embedded import EmbeddedMegha
from schedlab.services.execution import TaskSpec
from schedlab.services.messages import (
    HostAlive,
    HostFinished,
    HostReport,
    HostState,
    KillTask,
    RecordEvents,
    Recover,
    Recovered,
    Resolve,
    Resolved,
    StaleRuns,
    SubmitJob,
    VerifyEnds,
)
from schedlab.services.tasks import TaskStore
from schedlab.services.wire import Codec, WireError
from schedlab.workers.protocol import LaunchBatch, TasksFinished
from schedlab.workload.trace import TraceJob

BIG = (1 << 9999) | 0b1011


@pytest.mark.parametrize(
    "msg",
    [
        LaunchRequest(2, [(10, 3, 7), (11, 4, 0)]),
        StateUpdate(1, False, bits={5: (BIG, 0b10)}),
        StateUpdate(0, True, free={2: {0: (3.5, 1024.0)}}),
        StateUpdate(0, False, lists={1: ([1, 2], [3])}),
        LaunchRejected(1, [(10, 3, 7)], StateUpdate(1, False, bits={3: (0, 1 << 7)})),
        LaunchBatch([(10, 44)], (("lm", 1), ("gm", 2))),
        TasksFinished([(10, 44), (11, 45)]),
        SubmitJob(1 << 32 | 3, [1 << 32 | 7], [1.5], [0b101], None, [TaskSpec(kind="command", argv=["true"])], 0),
        RecordEvents(9, [("mark", 1, 2.5, 0), ("finished", 1, 3.0, {"status": "ok"})]),
        Recover(1),
        Recovered(0, StateUpdate(0, True, bits={0: (0b101, 0b010)}), [(10, 0, 2)], [("launch", 10, 0, 2, 1, [1.0])], since=12.5),
        Recovered(1, StateUpdate(1, True, bits={}), [], [], since=3.0, incarnation=2, found=[10, 12], found_sent=[2.5, 0.0]),
        Resolve(1, 7, [10, 11]),
        Resolved(0, 7, [10], [11]),
        HostState(1, 12345),
        HostReport(3, 99, [(10, 44, 1)]),
        HostReport(3, 99, [(10, 44, 1)], [1 << 32 | 5], [(11, 0, 1001.25), (12, 1, 0.0)], [1002.5]),
        HostAlive(3, 99, [(10, 44)], 5.5, [1 << 32 | 5]),
        KillTask(10, 44, ("lm", 1), 1 << 32 | 5),
        VerifyEnds([(10, 44)], [(1.0, 2.0, {"status": "ok"})]),
        HostFinished([(10, 44)], (("lm", 1), ("gm", 0)), [(1.0, 2.0, {"status": "ok"})], [1 << 32 | 5], 2, [0.5]),
        StaleRuns(1, [(10, 44), (11, 45)]),
    ],
)
def test_every_message_round_trips(msg):
    codec = Codec()
    src, dst, back = codec.decode(codec.encode(("gm", 0), ("lm", 1), msg))
    assert (src, dst) == (("gm", 0), ("lm", 1))
    assert back == msg


def test_addresses_of_every_run_id_round_trip():
    # run ids are 31-bit: a ten-digit one must be an address too (it once was not, and a
    # client silently lost every record of about half its runs)
    codec = Codec()
    for run in (0, 7, 10**9, 2**31 - 1):
        _src, dst, msg = codec.decode(codec.encode(("host", 3), ("run", run), RecordEvents(run, [("started", 0, 1.0, 5)])))
        assert dst == ("run", run) and msg.run == run


def test_launches_carry_their_tasks_descriptions_to_the_receivers_store():
    sender, receiver = TaskStore(), TaskStore()
    spec = TaskSpec(kind="cpu", duration=2.0, cpus=2)
    sender.add_job(77, 0.0, [5, 6], [1.0, 2.0], [0b1, 0], [(1.0, 256.0), (2.0, 512.0)], [spec, None])
    data = Codec(sender).encode(("gm", 0), ("lm", 0), LaunchRequest(0, [(5, 0, 1), (6, 0, 2)]))
    Codec(receiver).decode(data)
    assert receiver.mask == {5: 0b1, 6: 0} and receiver.request[6] == (2.0, 512.0)
    assert receiver.spec == {5: spec} and receiver.duration == {5: 1.0, 6: 2.0} and receiver.job[5] == 77


def env(**kw):
    e = {"v": 1, "type": "TasksFinished", "src": "host:0", "dst": "gm:0", "body": {"group": [[1, 2]]}}
    e.update(kw)
    return json.dumps(e).encode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xff\xfe", "malformed envelope"),
        (b"[]", "malformed envelope"),
        (env(v=2), "unsupported wire version 2"),
        (env(type="Bogus"), "unknown message type 'Bogus'"),
        (env(body={"group": [[1]]}), "TasksFinished: group.0"),
        (env(body={"group": [[1, 2]], "extra": 1}), "TasksFinished: extra: Extra inputs are not permitted"),
        (env(src="gm 0"), "bad address 'gm 0'"),
        (env(dst="gm:-1"), "bad address 'gm:-1'"),
        (env(type="StateUpdate", body={"lm": 0, "snapshot": False, "bits": {"1": ["zz", "0"]}}), "bitsets must be hexadecimal"),
        (env(type="LaunchRequest", body={"gm": -1, "items": []}), "LaunchRequest: gm"),
        (env(type="HostFinished", body={"group": [[1, 2]], "reply_to": ["lm:0"], "runs": [[1.0, 2.0, {}]], "sent": [1.0, 2.0]}),
         "sent has 2 entries for 1 ends"),
        (b"x" * 100, "over the 64-byte limit"),
    ],
)
def test_bad_input_is_one_line(data, reason):
    with pytest.raises(WireError) as e:
        Codec(max_bytes=64 if reason.startswith("over") else 8 << 20).decode(data)
    assert reason in e.value.reason and "\n" not in e.value.reason


def test_decisions_unchanged_when_every_message_crosses_the_wire():
    # the embedded cluster can push every message through its wire form: the schemas
    # carry everything the components need, so the decisions match the simulator's
    masks = [0b11, 0b01, 0, 0b10, 0, 0]
    cl = Cluster.slots(masks)
    trace = [TraceJob(0.06 * i, 0.03, [0.03] * (1 + i % 2), masks=[i % 3 & 0b11] * (1 + i % 2)) for i in range(15)]
    params = {"gms": 1, "lms": 1, "worker_choice": "random"}
    sim = simulate("megha", trace, cluster=cl, params=params, seed=4, constraints=False)

    async def main():
        async with EmbeddedMegha(cl, params, seed=4, wire="json") as c:
            r = await replay(c, trace, seed=4, constraints=False, timeout=30)
            assert c.mem is not None
            return r, sum(node.router.wire.unpacked for node in c.mem.nodes.values())

    real, sent = asyncio.run(main())
    assert real.tasks.worker.tolist() == sim.tasks.worker.tolist()
    assert sent > 0
