"""Reading a job ledger stream on the real broker: to its end, empty, and out of time.

A read that ran out of time used to leave aio-pika's queue iterator, which
nacks the messages still buffered; a stream refuses nack by closing the
channel, and the user saw a traceback. Now a read stops its consumers with
acknowledgements: out of time it is one line (``StreamReadTimeout``), and the
same channel reads the whole stream afterwards.
"""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from schedlab.cli import main
from schedlab.services import ledger
from schedlab.services.clusterfile import load_cluster
from schedlab.services.ledger import SignedStream, StreamReadTimeout, job_ledger

from .helpers import write_cluster
from .test_cluster import queues_of

RECORDS = 1500  # enough for the broker to be still sending when a read gives up


async def _fill(stream: SignedStream, n: int) -> None:
    await asyncio.gather(*(stream.append({"kind": "x", "i": i}) for i in range(n)))


def test_a_read_out_of_time_is_one_error_and_leaves_the_channel_usable(broker) -> None:
    name = f"t{secrets.token_hex(4)}.jobs"

    async def body() -> None:
        stream = SignedStream(broker, name, "a-secret", "test")
        await stream.connect()
        try:
            t0 = time.monotonic()
            assert await stream.read() == []  # empty: said after ledger.EMPTY_WAIT, not after the whole patience
            assert time.monotonic() - t0 < ledger.EMPTY_WAIT + 5
            await _fill(stream, RECORDS)
            for patience in (0.0, 0.01, 0.05):  # given up before, at and after the first deliveries
                with pytest.raises(StreamReadTimeout, match=f"its end not reached within {patience:g} s"):
                    await stream.read_bodies(patience)
                assert not stream.channel.is_closed  # no nack of a stream message: the channel lives on
            records = await stream.read()
            assert sorted(r["i"] for r in records) == list(range(RECORDS))  # every record once (appended concurrently)
            await _fill(stream, 3)  # a read sees what was appended before it began
            assert len(await stream.read()) == RECORDS + 3
        finally:
            await stream.channel.queue_delete(name)
            await stream.close()

    asyncio.run(body())
    assert queues_of(name.split(".")[0]) == []


def test_jobs_with_a_ledger_read_out_of_time_says_one_line(broker, tmp_path, capsys, monkeypatch) -> None:
    path = write_cluster(tmp_path, gms=1, lms=1, workers=2)
    loaded = load_cluster(path)
    assert loaded.secret

    async def fill() -> None:
        stream = job_ledger(loaded.broker, loaded.name, loaded.secret or "", "test")
        await stream.connect()
        try:
            await _fill(stream, RECORDS)
        finally:
            await stream.close()

    async def delete() -> None:
        stream = job_ledger(loaded.broker, loaded.name, loaded.secret or "", "test")
        await stream.connect()
        await stream.channel.queue_delete(stream.queue_name)
        await stream.close()

    asyncio.run(fill())
    try:
        monkeypatch.setattr(ledger, "READ_PATIENCE", 0.01)
        capsys.readouterr()
        assert main(["jobs", "--cluster", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err and "nack" not in err, err
        assert f"stream {loaded.name}.jobs: its end not reached within 0.01 s" in " ".join(err.split()), err
    finally:
        asyncio.run(delete())
    assert queues_of(loaded.name) == []
