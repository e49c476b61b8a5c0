"""Megha for real: the simulator's own GM and LM classes as services, with real workers.

The Megha paper deploys a prototype of Global Masters, Local Masters and
workers as separate processes (Section V-C/D); the simulator is, in its words,
a single-node deployment of that prototype. This package keeps it that way
round: the decision code is :mod:`schedlab.schedulers.megha`, unchanged, under
a second :class:`~schedlab.sim.runtime.Runtime`.

* :mod:`~.runtime` — :class:`~.runtime.AsyncRuntime`: wall clock, timers on the
  asyncio loop, messages through a transport;
* :mod:`~.inproc` — the in-process transport (the embedded default: a whole
  cluster in one process, real time, no broker);
* :mod:`~.tasks` — what a service knows of the tasks it handles;
* :mod:`~.records` — observers that stamp allocation phases, starts, ends and
  completions with the wall clock, and the run records they feed (the same
  :class:`~schedlab.metrics.recorder.Recorder` a simulation fills);
* :mod:`~.execution` — running a task for real (sleep, the paper's synthetic
  CPU task, a command);
* :mod:`~.worker` — a worker host: the workers of one machine;
* :mod:`~.embedded` — a Megha cluster in one process;
* :mod:`~.fairness` — global fair sharing (Algorithm 2) with the LMs' truth
  as messages and preemptions as kills on the worker hosts;
* :mod:`~.client` — replaying a trace against a cluster and summarising it
  with the simulator's summary schema; :class:`~.client.Client`, the Python
  client;
* :mod:`~.wire`, :mod:`~.net`, :mod:`~.node`, :mod:`~.remote`,
  :mod:`~.clusterfile`, :mod:`~.supervise`, :mod:`~.cli` — message schemas,
  the HTTP + RabbitMQ transport, service processes, the client's view of
  them, cluster files, process supervision and the commands;
* :mod:`~.prototype` — the Megha paper's prototype experiment beside the
  simulator (``schedlab reproduce megha-prototype``).
"""

from __future__ import annotations

from schedlab.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "AsyncRuntime": "runtime",
        "EmbeddedMegha": "embedded",
        "replay": "client",
        "Client": "client",
        "RemoteCluster": "remote",
        "TaskSpec": "execution",
    },
)
