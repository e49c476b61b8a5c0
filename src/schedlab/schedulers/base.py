"""What every scheduler is: a class with a name, a validated parameter model, and ``submit(job)``.

The simulation engine builds a :class:`SchedulerContext` (runtime, cluster,
task table, recorder, the simulated workers), validates the user's parameters against the
scheduler's ``Params`` (a frozen pydantic model; unknown names are refused) and
calls :meth:`Scheduler.submit` at each job's arrival time — the moment its
tasks enter the framework's request queue (Megha paper, Eq. 1). From then on the
scheduler acts through the runtime (messages, timers) and the worker protocol
(:mod:`schedlab.workers.protocol`), and reports through the recorder's
:class:`~schedlab.metrics.observer.Observer` interface: allocation-time phases
with ``mark``, and ``task_reported`` when it learns a task finished.

The context is the simulation's wiring; the components it builds are typed
against the :class:`~schedlab.sim.runtime.Runtime` protocol only, so the same
classes run under the real services' runtime (:mod:`schedlab.services`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schedlab.cluster.model import Cluster
from schedlab.errors import InputError
from schedlab.metrics.recorder import Recorder
from schedlab.sim.runtime import Runtime
from schedlab.workers.simulated import WorkerPool
from schedlab.workload.model import Job, TaskTable


def _known_choice(name: str) -> str:
    from schedlab.schedulers.placement import choice_class, choice_names

    try:
        choice_class(name)
    except InputError:  # worded as pydantic words a Literal's refusal (one line, the value appended by the caller)
        raise ValueError("Input should be " + " or ".join(repr(n) for n in choice_names())) from None
    return name


# How a scheduler picks among the free workers that can run a task (one name, one meaning, for every scheduler):
# the name of a policy of schedlab.schedulers.placement — a built-in or a plugin's
WorkerChoiceName = Annotated[str, AfterValidator(_known_choice)]


def worker_choice_field(default: str) -> Any:
    """The ``worker_choice`` parameter; each scheduler keeps its paper's default."""
    return Field(
        default,
        description="which eligible free worker gets a task: min-constraints (the one with the fewest machine "
        "constraints, keeping versatile workers free), random, or a plugin's policy (entry points "
        "schedlab.worker_choices)",
    )


def compat_field() -> Any:
    """The ``compat`` parameter of the schedulers whose papers' own simulators we reproduce."""
    return Field("none", description="'authors' reproduces the behaviour of the paper's own simulator (see the scheduler's docs)")


def added_field(default: Any, description: str) -> Any:
    """A parameter added after results were stored: left out of :meth:`SchedulerParams.dump` while at ``default``.

    Run ids hash the dumped parameters and the golden summaries hold them, so a new field that every existing run
    has at its default (the old behaviour) must not change either: existing stores stay valid.
    """
    return Field(default, description=description, json_schema_extra={"omit_at_default": True})


class SchedulerParams(BaseModel):
    """Base of every scheduler's parameters: frozen, and unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The parameters (as :meth:`model_dump`), without the :func:`added_field` ones left at their default."""
        out = self.model_dump(mode=mode)
        for name, f in type(self).model_fields.items():
            extra = f.json_schema_extra
            if isinstance(extra, dict) and extra.get("omit_at_default") and getattr(self, name) == f.default:
                del out[name]
        return out


@dataclass
class SchedulerContext:
    runtime: Runtime
    cluster: Cluster
    tasks: TaskTable
    recorder: Recorder
    pool: WorkerPool
    more_jobs: Callable[[], bool] = field(default=lambda: False)  # can the workload still bring jobs?

    def active(self) -> bool:
        """Is there anything left to do: jobs still to come, or tasks whose completion is not known yet?"""
        return self.more_jobs() or self.recorder.open_tasks > 0


class Scheduler(ABC):
    """A data-center scheduler driven by job arrivals."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    Params: ClassVar[type[SchedulerParams]] = SchedulerParams

    def __init__(self, ctx: SchedulerContext, params: SchedulerParams) -> None:
        self.ctx = ctx
        self.params = params

    @abstractmethod
    def submit(self, job: Job) -> None:
        """The job's tasks arrive at the framework now."""

    def counters(self) -> dict[str, int]:
        """Scheduler-specific counters added to the run's summary."""
        return {}
