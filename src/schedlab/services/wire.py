"""Wire form of the services' messages: versioned, schema-validated, size-limited JSON.

Every message crosses the network as one JSON envelope::

    {"v": 1, "type": "LaunchRequest", "src": "gm:0", "dst": "lm:1", "body": {...}}

``body`` is validated against the pydantic model of ``type`` (extra fields
refused), and the whole envelope against :data:`MAX_MESSAGE_BYTES` before it
is parsed. Anything else — not JSON, an unknown type, another version, a body
that does not validate, an address that is not one — raises
:class:`WireError` with a one-line reason, which a service answers with a 400
and counts; the message never reaches a component.

The bodies mirror the sans-IO messages of :mod:`schedlab.schedulers.megha.messages`
and :mod:`schedlab.workers.protocol` field for field, with two additions:

* **Task descriptions travel with the tasks.** In a simulation every component
  reads one task table; a real LM learns a task's constraints and request from
  the launch request naming it, and a worker host what to run from the launch
  batch. :class:`Codec` attaches those (:class:`TaskWire`) from the sender's
  :class:`~schedlab.services.tasks.TaskStore` on the way out and files them in
  the receiver's store on the way in.
* **Bitsets are hexadecimal strings**: availability bitsets have one bit per
  worker of a partition (thousands of bits), beyond what JSON integers carry
  portably.

Addresses are ``"kind:index"`` strings (``("gm", 0)`` is ``"gm:0"``) or plain
names (``"workers"``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schedlab.schedulers.megha.messages import (
    LaunchRejected,
    LaunchRequest,
    PreemptRejected,
    PreemptRequest,
    StateUpdate,
    TaskLost,
    TaskPreempted,
)
from schedlab.services.execution import TaskSpec
from schedlab.services.messages import (
    CancelJob,
    CancelRuns,
    Done,
    HoldingsReport,
    HostAlive,
    HostFinished,
    HostReport,
    HostState,
    KillTask,
    Marker,
    RecordEvents,
    Recover,
    Recovered,
    Resolve,
    Resolved,
    StaleRuns,
    SubmitJob,
    TaskKilled,
    VerifyEnds,
)
from schedlab.services.tasks import TaskStore
from schedlab.workers.protocol import LaunchBatch, LaunchTask, TaskFinished, TasksFinished

WIRE_VERSION = 1
MAX_MESSAGE_BYTES = 8 << 20  # a multi-resource snapshot of 10,000 workers is about 0.5 MB
MAX_ITEMS = 100_000
# an envelope decoded, its tasks not filed yet: (src, dst, message, tasks, seq, (inc, bid, sent, until))
Frame = tuple[Any, Any, Any, Any, tuple[int, int] | None, tuple[int | None, int | None, float | None, float | None]]

NonNeg = Field(ge=0)


class WireError(ValueError):
    """A message that is refused: ``reason`` is one line for the peer and the log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskWire(_Body):
    """What a service needs to know of a task it did not receive from the client itself."""

    tid: int = Field(ge=0)
    jid: int = Field(ge=0)
    duration: float = Field(ge=0)
    mask: int = Field(0, ge=0)
    request: list[float] | None = None
    spec: TaskSpec | None = None
    user: int = Field(0, ge=0)
    arrival: float | None = None  # when the job reached its GM (GM clock): hosts measure allocation times with it
    marked: float | None = None  # the sender's latest allocation-phase mark of the task (its clock): timings


class SubmitJobW(_Body):
    jid: int = Field(ge=0)
    tasks: list[TaskWire] = Field(min_length=1, max_length=MAX_ITEMS)
    user: int = Field(0, ge=0)


class LaunchRequestW(_Body):
    gm: int = Field(ge=0)
    items: list[tuple[int, int, int]] = Field(max_length=MAX_ITEMS)
    tasks: list[TaskWire] = Field(default_factory=list, max_length=MAX_ITEMS)


class StateUpdateW(_Body):
    lm: int = Field(ge=0)
    snapshot: bool
    bits: dict[int, tuple[str, str]] = Field(default_factory=dict)
    free: dict[int, dict[int, list[float]]] = Field(default_factory=dict)
    lists: dict[int, tuple[list[int], list[int]]] = Field(default_factory=dict)


class LaunchRejectedW(_Body):
    lm: int = Field(ge=0)
    items: list[tuple[int, int, int]] = Field(max_length=MAX_ITEMS)
    update: StateUpdateW
    sent: float = Field(0.0, ge=0)


class PreemptRequestW(_Body):
    gm: int = Field(ge=0)
    tid: int = Field(ge=0)
    victim: int = Field(ge=0)
    p: int = Field(ge=0)
    pos: int = Field(ge=0)
    tasks: list[TaskWire] = Field(default_factory=list, max_length=1)


class PreemptRejectedW(_Body):
    lm: int = Field(ge=0)
    tid: int = Field(ge=0)
    victim: int = Field(ge=0)
    p: int = Field(ge=0)
    pos: int = Field(ge=0)
    update: StateUpdateW


class TaskPreemptedW(_Body):
    tid: int = Field(ge=0)
    p: int = Field(ge=0)
    pos: int = Field(ge=0)
    by_gm: int = Field(ge=0)


class LaunchBatchW(_Body):
    items: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)
    reply_to: list[str] = Field(max_length=16)
    tasks: list[TaskWire] = Field(default_factory=list, max_length=MAX_ITEMS)


class LaunchTaskW(_Body):
    tid: int = Field(ge=0)
    worker: int = Field(ge=0)
    reply_to: str
    tasks: list[TaskWire] = Field(default_factory=list, max_length=1)


class TasksFinishedW(_Body):
    group: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)


class TaskFinishedW(_Body):
    tid: int = Field(ge=0)
    worker: int = Field(ge=0)


class RecordEventsW(_Body):
    """Lifecycle events of one run's tasks (:mod:`~schedlab.services.records`)."""

    run: int = Field(ge=0)
    events: list[tuple[str, int, float, Any]] = Field(max_length=MAX_ITEMS)


class HoldingsEventW(_Body):
    kind: Literal["launch", "vacate", "settle"]
    tid: int = Field(ge=0)
    p: int = Field(0, ge=0)
    pos: int = Field(0, ge=0)
    user: int = Field(0, ge=0)
    amount: list[float] | None = Field(None, max_length=64)


class HoldingsReportW(_Body):
    lm: int = Field(ge=0)
    events: list[HoldingsEventW] = Field(max_length=MAX_ITEMS)


class KillTaskW(_Body):
    tid: int = Field(ge=0)
    worker: int = Field(ge=0)
    reply_to: str
    launch: int = Field(0, ge=0)


class TaskKilledW(_Body):
    tid: int = Field(ge=0)
    killed: bool


def _holdings_body(m: HoldingsReport) -> dict:
    out = []
    for ev in m.events:
        if ev[0] == "launch":
            out.append({"kind": "launch", "tid": ev[1], "p": ev[2], "pos": ev[3], "user": ev[4], "amount": list(ev[5])})
        else:
            out.append({"kind": ev[0], "tid": ev[1]})
    return {"lm": m.lm, "events": out}


def _holdings_msg(w: HoldingsReportW) -> HoldingsReport:
    events: list[tuple] = []
    for e in w.events:
        if e.kind == "launch":
            if e.amount is None:
                raise WireError("HoldingsReport: a launch needs its amount")
            events.append(("launch", e.tid, e.p, e.pos, e.user, list(e.amount)))
        else:
            events.append((e.kind, e.tid))
    return HoldingsReport(w.lm, events)


class TaskLostW(_Body):
    tid: int = Field(ge=0)
    p: int = Field(ge=0)
    pos: int = Field(ge=0)
    sent: float = Field(0.0, ge=0)


class HostAliveW(_Body):
    host: int = Field(ge=0)
    incarnation: int = Field(ge=0)
    running: list[tuple[int, int]] = Field(default_factory=list, max_length=MAX_ITEMS)  # (tid, worker)
    at: float = Field(0.0, ge=0)
    launches: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)


class HostFinishedW(_Body):
    group: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)
    reply_to: list[str] = Field(max_length=16)
    runs: list[tuple[float, float, dict[str, Any]]] = Field(max_length=MAX_ITEMS)
    launches: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)
    lm_incarnation: int = Field(default=0, ge=0)
    sent: list[float] = Field(default_factory=list, max_length=MAX_ITEMS)

    @model_validator(mode="after")
    def _one_per_end(self) -> HostFinishedW:
        # the receiver pairs them end by end: a list of another length is refused here, not failed on there
        n = len(self.group)
        for name, values in (("runs", self.runs), ("launches", self.launches), ("sent", self.sent)):
            if len(values) != n and (values or name == "runs"):
                raise ValueError(f"{name} has {len(values)} entries for {n} ends")
        return self


class RecoverW(_Body):
    gm: int = Field(ge=0)


class RecoveredW(_Body):
    lm: int = Field(ge=0)
    update: StateUpdateW
    running: list[tuple[int, int, int]] = Field(default_factory=list, max_length=MAX_ITEMS)
    holdings: list[HoldingsEventW] = Field(default_factory=list, max_length=MAX_ITEMS)
    tasks: list[TaskWire] = Field(default_factory=list, max_length=MAX_ITEMS)
    since: float = Field(0.0, ge=0)
    incarnation: int = Field(0, ge=0)
    found: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)
    found_sent: list[float] = Field(default_factory=list, max_length=MAX_ITEMS)
    running_sent: list[float] = Field(default_factory=list, max_length=MAX_ITEMS)


class HostStateW(_Body):
    lm: int = Field(ge=0)
    incarnation: int = Field(ge=0)


class HostReportW(_Body):
    host: int = Field(ge=0)
    incarnation: int = Field(ge=0)
    running: list[tuple[int, int, int]] = Field(default_factory=list, max_length=MAX_ITEMS)
    launches: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)
    ended: list[tuple[int, int, float]] = Field(default_factory=list, max_length=MAX_ITEMS)
    sent: list[float] = Field(default_factory=list, max_length=MAX_ITEMS)
    tasks: list[TaskWire] = Field(default_factory=list, max_length=MAX_ITEMS)


class VerifyEndsW(_Body):
    group: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)
    runs: list[tuple[float, float, dict[str, Any]]] = Field(max_length=MAX_ITEMS)
    launches: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)


class MarkerW(_Body):
    token: int = Field(ge=0)


class DoneW(_Body):
    gm: int = Field(ge=0)
    tids: list[int] = Field(max_length=MAX_ITEMS)


class CancelJobW(_Body):
    jid: int = Field(ge=0)
    gm: int = Field(ge=0)


class CancelRunsW(_Body):
    gm: int = Field(ge=0)
    items: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)


class StaleRunsW(_Body):
    gm: int = Field(ge=0)
    items: list[tuple[int, int]] = Field(max_length=MAX_ITEMS)


class ResolveW(_Body):
    gm: int = Field(ge=0)
    ask: int = Field(ge=0)
    tids: list[int] = Field(max_length=MAX_ITEMS)


class ResolvedW(_Body):
    lm: int = Field(ge=0)
    ask: int = Field(ge=0)
    completed: list[int] = Field(max_length=MAX_ITEMS)
    running: list[int] = Field(default_factory=list, max_length=MAX_ITEMS)


class Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: int
    type: str = Field(max_length=64)
    src: str = Field(max_length=128)
    dst: str = Field(max_length=128)
    body: dict[str, Any]
    seq: tuple[int, int] | None = None  # (sender incarnation, number) on links delivered in order
    inc: int | None = None  # to a worker host: the incarnation the sender meant (a restarted host refuses older launches)
    bid: int | None = None  # to a worker host: this launch's id (an HTTP retry repeats it; a relaunch has a new one)
    sent: float | None = None  # GM -> LM requests: when first sent (retries repeat it; an LM acts only on fresh ones, see links)
    until: float | None = None  # LM -> worker host launches: acted on only before then (the LM's lease on the host, see failures)


# -- addresses ---------------------------------------------------------------------------------------
def address_str(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) == 2 and isinstance(addr[0], str) and isinstance(addr[1], int):
        return f"{addr[0]}:{addr[1]}"
    if isinstance(addr, str):
        parse_address(addr)
        return addr
    raise WireError(f"not an address: {addr!r}")


def parse_address(text: str) -> Any:
    kind, sep, idx = text.partition(":")
    if not kind or not kind.replace("-", "").replace("_", "").isalnum():
        raise WireError(f"bad address {text!r}")
    if not sep:
        return kind
    if not idx.isdigit() or len(idx) > 18:
        raise WireError(f"bad address {text!r}")
    return (kind, int(idx))


# -- message <-> body ------------------------------------------------------------------------------
def _hex(x: int) -> str:
    return format(x, "x")


def _update_body(u: StateUpdate) -> dict:
    return {
        "lm": u.lm,
        "snapshot": u.snapshot,
        "bits": {p: (_hex(a), _hex(b)) for p, (a, b) in u.bits.items()},
        "free": {p: {pos: list(v) for pos, v in ch.items()} for p, ch in u.free.items()},
        "lists": {p: (list(b), list(a)) for p, (b, a) in u.lists.items()},
    }


def _update_msg(w: StateUpdateW) -> StateUpdate:
    try:
        bits = {p: (int(a, 16), int(b, 16)) for p, (a, b) in w.bits.items()}
    except ValueError:
        raise WireError("state update: bitsets must be hexadecimal") from None
    return StateUpdate(
        w.lm,
        w.snapshot,
        bits,
        {p: {pos: tuple(v) for pos, v in ch.items()} for p, ch in w.free.items()},
        {p: (list(b), list(a)) for p, (b, a) in w.lists.items()},
    )


_Spec = tuple[type[_Body], Callable[[Any], dict], Callable[[Any], Any]]

# type name -> (wire model, message -> body dict, validated model -> message)
SCHEMAS: dict[str, _Spec] = {
    "LaunchRequest": (LaunchRequestW, lambda m: {"gm": m.gm, "items": m.items}, lambda w: LaunchRequest(w.gm, [tuple(i) for i in w.items])),
    "StateUpdate": (StateUpdateW, _update_body, _update_msg),
    "LaunchRejected": (
        LaunchRejectedW,
        lambda m: {"lm": m.lm, "items": m.items, "update": _update_body(m.update), "sent": m.sent},
        lambda w: LaunchRejected(w.lm, [tuple(i) for i in w.items], _update_msg(w.update), w.sent),
    ),
    "PreemptRequest": (PreemptRequestW, lambda m: {"gm": m.gm, "tid": m.tid, "victim": m.victim, "p": m.p, "pos": m.pos},
                       lambda w: PreemptRequest(w.gm, w.tid, w.victim, w.p, w.pos)),
    "PreemptRejected": (
        PreemptRejectedW,
        lambda m: {"lm": m.lm, "tid": m.tid, "victim": m.victim, "p": m.p, "pos": m.pos, "update": _update_body(m.update)},
        lambda w: PreemptRejected(w.lm, w.tid, w.victim, w.p, w.pos, _update_msg(w.update)),
    ),
    "TaskPreempted": (TaskPreemptedW, lambda m: {"tid": m.tid, "p": m.p, "pos": m.pos, "by_gm": m.by_gm},
                      lambda w: TaskPreempted(w.tid, w.p, w.pos, w.by_gm)),
    "LaunchBatch": (
        LaunchBatchW,
        lambda m: {"items": m.items, "reply_to": [address_str(a) for a in m.reply_to]},
        lambda w: LaunchBatch([tuple(i) for i in w.items], tuple(parse_address(a) for a in w.reply_to)),
    ),
    "LaunchTask": (LaunchTaskW, lambda m: {"tid": m.tid, "worker": m.worker, "reply_to": address_str(m.reply_to)},
                   lambda w: LaunchTask(w.tid, w.worker, parse_address(w.reply_to))),
    "TasksFinished": (TasksFinishedW, lambda m: {"group": m.group}, lambda w: TasksFinished([tuple(g) for g in w.group])),
    "TaskFinished": (TaskFinishedW, lambda m: {"tid": m.tid, "worker": m.worker}, lambda w: TaskFinished(w.tid, w.worker)),
}

def _submit_body(m: SubmitJob) -> dict:
    n = len(m.tids)
    return {
        "jid": m.jid,
        "user": m.user,
        "tasks": [
            {
                "tid": m.tids[k],
                "jid": m.jid,
                "duration": m.durations[k],
                "mask": m.masks[k] if m.masks is not None else 0,
                "request": list(m.requests[k]) if m.requests is not None else None,
                "spec": m.specs[k].model_dump() if m.specs is not None and m.specs[k] is not None else None,
                "user": m.user,
            }
            for k in range(n)
        ],
    }


def _submit_msg(w: SubmitJobW) -> SubmitJob:
    ts = w.tasks
    if any(t.jid != w.jid for t in ts):
        raise WireError("SubmitJob: every task must belong to the job")
    has_req = [t.request is not None for t in ts]
    if any(has_req) and not all(has_req):
        raise WireError("SubmitJob: either every task has a request or none")
    specs = [t.spec for t in ts]
    return SubmitJob(
        w.jid,
        [t.tid for t in ts],
        [t.duration for t in ts],
        [t.mask for t in ts],
        [tuple(t.request or ()) for t in ts] if all(has_req) else None,  # every request is there (checked above)
        specs if any(s is not None for s in specs) else None,
        w.user,
    )


SCHEMAS["SubmitJob"] = (SubmitJobW, _submit_body, _submit_msg)
SCHEMAS["HoldingsReport"] = (HoldingsReportW, _holdings_body, _holdings_msg)
SCHEMAS["KillTask"] = (KillTaskW, lambda m: {"tid": m.tid, "worker": m.worker, "reply_to": address_str(m.reply_to), "launch": m.launch},
                       lambda w: KillTask(w.tid, w.worker, parse_address(w.reply_to), w.launch))
SCHEMAS["TaskKilled"] = (TaskKilledW, lambda m: {"tid": m.tid, "killed": m.killed}, lambda w: TaskKilled(w.tid, w.killed))
SCHEMAS["TaskLost"] = (TaskLostW, lambda m: {"tid": m.tid, "p": m.p, "pos": m.pos, "sent": m.sent},
                       lambda w: TaskLost(w.tid, w.p, w.pos, w.sent))
SCHEMAS["HostAlive"] = (HostAliveW, lambda m: {"host": m.host, "incarnation": m.incarnation, "running": m.running, "at": m.at,
                                               "launches": m.launches},
                        lambda w: HostAlive(w.host, w.incarnation, [tuple(x) for x in w.running], w.at, list(w.launches)))
SCHEMAS["HostFinished"] = (
    HostFinishedW,
    lambda m: {"group": m.group, "reply_to": [address_str(a) for a in m.reply_to], "runs": m.runs, "launches": m.launches,
               "lm_incarnation": m.lm_incarnation, "sent": m.sent},
    lambda w: HostFinished([tuple(g) for g in w.group], tuple(parse_address(a) for a in w.reply_to), [tuple(r) for r in w.runs],
                           list(w.launches), w.lm_incarnation, list(w.sent)),
)
SCHEMAS["Recover"] = (RecoverW, lambda m: {"gm": m.gm}, lambda w: Recover(w.gm))
SCHEMAS["Recovered"] = (
    RecoveredW,
    lambda m: {"lm": m.lm, "update": _update_body(m.update), "running": m.running,
               "holdings": _holdings_body(HoldingsReport(m.lm, m.holdings))["events"], "since": m.since,
               "incarnation": m.incarnation, "found": m.found, "found_sent": m.found_sent, "running_sent": m.running_sent},
    lambda w: Recovered(w.lm, _update_msg(w.update), [tuple(r) for r in w.running],
                        _holdings_msg(HoldingsReportW(lm=w.lm, events=w.holdings)).events, w.since, w.incarnation,
                        list(w.found), list(w.found_sent), list(w.running_sent)),
)
SCHEMAS["HostState"] = (HostStateW, lambda m: {"lm": m.lm, "incarnation": m.incarnation}, lambda w: HostState(w.lm, w.incarnation))
SCHEMAS["HostReport"] = (HostReportW, lambda m: {"host": m.host, "incarnation": m.incarnation, "running": m.running, "launches": m.launches,
                                                 "ended": m.ended, "sent": m.sent},
                         lambda w: HostReport(w.host, w.incarnation, [tuple(r) for r in w.running], list(w.launches),
                                              [tuple(e) for e in w.ended], list(w.sent)))
SCHEMAS["VerifyEnds"] = (VerifyEndsW, lambda m: {"group": m.group, "runs": m.runs, "launches": m.launches},
                         lambda w: VerifyEnds([tuple(g) for g in w.group], [tuple(r) for r in w.runs], list(w.launches)))
SCHEMAS["Marker"] = (MarkerW, lambda m: {"token": m.token}, lambda w: Marker(w.token))
SCHEMAS["Done"] = (DoneW, lambda m: {"gm": m.gm, "tids": m.tids}, lambda w: Done(w.gm, list(w.tids)))
SCHEMAS["CancelJob"] = (CancelJobW, lambda m: {"jid": m.jid, "gm": m.gm}, lambda w: CancelJob(w.jid, w.gm))
SCHEMAS["CancelRuns"] = (CancelRunsW, lambda m: {"gm": m.gm, "items": m.items}, lambda w: CancelRuns(w.gm, [tuple(i) for i in w.items]))
SCHEMAS["StaleRuns"] = (StaleRunsW, lambda m: {"gm": m.gm, "items": m.items}, lambda w: StaleRuns(w.gm, [tuple(i) for i in w.items]))
SCHEMAS["Resolve"] = (ResolveW, lambda m: {"gm": m.gm, "ask": m.ask, "tids": m.tids}, lambda w: Resolve(w.gm, w.ask, list(w.tids)))
SCHEMAS["Resolved"] = (ResolvedW, lambda m: {"lm": m.lm, "ask": m.ask, "completed": m.completed, "running": m.running},
                       lambda w: Resolved(w.lm, w.ask, list(w.completed), list(w.running)))
SCHEMAS["RecordEvents"] = (RecordEventsW, lambda m: {"run": m.run, "events": m.events}, lambda w: RecordEvents(w.run, [tuple(e) for e in w.events]))

# which tasks a message names, for attaching their descriptions
NAMED_TASKS: dict[str, Callable[[Any], list[int]]] = {
    "LaunchRequest": lambda m: [t for t, _p, _pos in m.items],
    "LaunchBatch": lambda m: [t for t, _w in m.items],
    "LaunchTask": lambda m: [m.tid],
    "PreemptRequest": lambda m: [m.tid],
    "Recovered": lambda m: [t for t, _p, _pos in m.running],
    "HostReport": lambda m: [t for t, _w, _g in m.running],
}


def register(name: str, model: type[_Body], to_body: Callable[[Any], dict], from_wire: Callable[[Any], Any]) -> None:
    """Add a message type (the services' own messages register here)."""
    SCHEMAS[name] = (model, to_body, from_wire)


def task_wire(store: TaskStore, tid: int) -> dict:
    req = store.request.get(tid)
    spec = store.spec.get(tid)
    jid = store.job[tid]
    return {
        "tid": tid,
        "jid": jid,
        "duration": store.duration[tid],
        "mask": store.mask[tid],
        "request": None if req is None else list(req),
        "spec": None if spec is None else spec.model_dump(),
        "user": store.user.get(tid, 0),
        "arrival": store.arrival.get(tid),
        "marked": store.marked.get(tid),
    }


def file_tasks(store: TaskStore, tasks: list[TaskWire]) -> None:
    for t in tasks:
        store.add_task(t.tid, t.jid, t.duration, t.mask, None if t.request is None else tuple(t.request), t.spec, t.user, t.arrival, t.marked)


class Codec:
    """Encodes and decodes envelopes; with a store, attaches and files task descriptions."""

    def __init__(self, store: TaskStore | None = None, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.store = store
        self.max_bytes = max_bytes

    def encode(self, src: Any, dst: Any, msg: Any, seq: tuple[int, int] | None = None) -> bytes:
        data = json.dumps(self.envelope(src, dst, msg, seq), separators=(",", ":")).encode()
        if len(data) > self.max_bytes:
            raise WireError(f"{msg.__class__.__name__} of {len(data)} bytes is over the {self.max_bytes}-byte limit")
        return data

    def envelope(self, src: Any, dst: Any, msg: Any, seq: tuple[int, int] | None = None) -> dict:
        """The envelope of ``msg`` as a JSON-ready dict (size-checked)."""
        name = msg.__class__.__name__
        spec = SCHEMAS.get(name)
        if spec is None:
            raise WireError(f"no wire form for message type {name}")
        body = spec[1](msg)
        named = NAMED_TASKS.get(name)
        if named is not None and self.store is not None:
            store = self.store
            body["tasks"] = [task_wire(store, t) for t in named(msg) if t in store]
        env = {"v": WIRE_VERSION, "type": name, "src": address_str(src), "dst": address_str(dst), "body": body}
        if seq is not None:
            env["seq"] = seq
        items = len(body.get("items", ())) + len(body.get("tasks", ())) + len(body.get("group", ())) + len(body.get("events", ()))
        if items > MAX_ITEMS:
            raise WireError(f"{name} with {items} items is over the {MAX_ITEMS}-item limit")
        return env

    def decode(self, data: bytes) -> tuple[Any, Any, Any]:
        """``(src, dst, message)`` of an envelope; task descriptions it carries are filed in the store."""
        return self.decode_seq(data)[:3]

    def decode_seq(self, data: bytes) -> tuple[Any, Any, Any, tuple[int, int] | None]:
        """``(src, dst, message, seq)`` of an envelope (see :class:`Envelope`); its tasks are filed in the store."""
        src, dst, msg, tasks, seq, _meta = self.decode_frame(data)
        self.file(tasks)
        return src, dst, msg, seq

    def decode_frame(self, data: bytes) -> Frame:
        """One envelope (a broker message) as a frame, its tasks not filed yet (see :meth:`decode_frames`)."""
        if len(data) > self.max_bytes:
            raise WireError(f"message of {len(data)} bytes is over the {self.max_bytes}-byte limit")
        try:
            env = Envelope.model_validate_json(data)
        except ValidationError as e:
            raise WireError(f"malformed envelope: {_first_error(e)}") from None
        return (*self._open(env, file=False), env.seq, (env.inc, env.bid, env.sent, env.until))

    def decode_frames(self, data: bytes) -> list[Frame]:
        """A JSON list of envelopes (an HTTP body): every one is checked before any is filed or used.

        Returns ``(src, dst, message, tasks, seq, (inc, bid, sent))`` per envelope; the caller files
        ``tasks`` (:meth:`file`) once it has accepted the whole request.
        """
        if len(data) > self.max_bytes:
            raise WireError(f"body of {len(data)} bytes is over the {self.max_bytes}-byte limit")
        try:
            frames = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise WireError(f"body is not JSON: {e}") from None
        if not isinstance(frames, list) or not frames or len(frames) > 10_000:
            raise WireError("body must be a non-empty JSON list of envelopes")
        out: list[Frame] = []
        for k, frame in enumerate(frames):
            try:
                env = Envelope.model_validate(frame)
            except ValidationError as e:
                raise WireError(f"envelope {k}: {_first_error(e)}") from None
            out.append((*self._open(env, file=False), env.seq, (env.inc, env.bid, env.sent, env.until)))
        return out

    def decode_envelope(self, env: dict) -> Frame:
        """One envelope given as a dict (from a component in the same process): ``(src, dst, message, tasks, seq, (inc, bid, sent))``."""
        try:
            e = Envelope.model_validate(env)
        except ValidationError as err:
            raise WireError(f"malformed envelope: {_first_error(err)}") from None
        return (*self._open(e, file=False), e.seq, (e.inc, e.bid, e.sent, e.until))

    def file(self, tasks: Any) -> None:
        if tasks and self.store is not None:
            file_tasks(self.store, tasks)

    def _open(self, env: Envelope, file: bool = True) -> Any:
        if env.v != WIRE_VERSION:
            raise WireError(f"unsupported wire version {env.v} (this service speaks {WIRE_VERSION})")
        spec = SCHEMAS.get(env.type)
        if spec is None:
            raise WireError(f"unknown message type {env.type!r}")
        try:
            body = spec[0].model_validate(env.body)
        except ValidationError as e:
            raise WireError(f"{env.type}: {_first_error(e)}") from None
        msg = spec[2](body)
        tasks = getattr(body, "tasks", None) if env.type in NAMED_TASKS else None
        if not file:
            return parse_address(env.src), parse_address(env.dst), msg, tasks
        self.file(tasks)
        return parse_address(env.src), parse_address(env.dst), msg


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(x) for x in err.get("loc", ())) or "body"
    return f"{where}: {err.get('msg', 'invalid')}"
