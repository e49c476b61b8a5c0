"""The data center's workers: the protocol every scheduler speaks to them, and the simulated pool.

* :mod:`~schedlab.workers.protocol` — the messages a scheduler sends to workers
  (:class:`~.protocol.LaunchTask`, :class:`~.protocol.LaunchBatch`) and gets back
  (:class:`~.protocol.TaskFinished`, :class:`~.protocol.TasksFinished`), and the
  small :class:`~.protocol.LocalWorkers` interface of components that sit on
  the workers themselves (a node monitor starting a task, an LM killing one);
* :mod:`~schedlab.workers.simulated` — :class:`~.simulated.WorkerPool`, the
  simulated world: every worker of a simulated run, the referee that refuses
  over-allocation.

The real workers (processes that run tasks for real) live in
:mod:`schedlab.services.worker` and speak the same protocol, so scheduler
components cannot tell them apart.
"""
