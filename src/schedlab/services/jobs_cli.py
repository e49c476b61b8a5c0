"""``schedlab jobs`` and ``schedlab job status|logs|cancel``: the jobs of a real cluster, read from where they are kept.

A thin layer over :mod:`schedlab.services.jobs` (the job ledger and the GMs'
open jobs; ``submit --detach`` is in :mod:`schedlab.services.cli`): it parses
options, calls the library and prints. User errors are one line and exit 2;
a job the ledger does not know is exit 1. ``job cancel`` exits 0 when the job
is cancelled (now or before) or its cancellation is durably requested, 3 when
the job had already ended (nothing cancelled).
"""

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from schedlab.errors import InputError

out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def jobs_cmd(
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list of the jobs.")] = False,
    state: Annotated[str | None, typer.Option("--state", help="Only jobs in this state: queued, running, done, failed, cancelling, "
                                                           "cancelled, unknown.")] = None,
) -> None:
    """List the cluster's jobs with their state, task counts, user and times (from the job ledger and the GMs).

    Example: schedlab jobs --cluster demo.yaml --state running
    """
    import asyncio

    from schedlab.services.clusterfile import load_cluster
    from schedlab.services.jobs import check_state, list_jobs

    check_state(state)
    loaded = load_cluster(cluster)
    rows = [r for r in asyncio.run(_listing(loaded, list_jobs)) if state is None or r["state"] == state]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    import datetime as dt

    def when(t: float | None) -> str:
        return "" if t is None else dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")

    t = Table("job", "state", "tasks", "queued", "running", "completed", "user", "gm", "submitted", "ended", title=f"jobs of cluster {loaded.name}",
              title_justify="left")
    for r in rows:
        t.add_row(str(r["job"]), r["state"], str(r["tasks"]), str(r["queued"]), str(r["running"]), str(r["completed"]), str(r["user"]),
                  str(r["gm"]), when(r["submitted"]), when(r["ended"]))
    out.print(t)


job_app = typer.Typer(help="One job of a real cluster: its status, its tasks' output, cancelling it.", no_args_is_help=True)


@job_app.command("status")
def job_status_cmd(
    job: Annotated[int, typer.Argument(help="Job id (as submit --detach printed it).")],
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
) -> None:
    """Print one job's state, task counts and times as JSON; exit 1 if the ledger has no such job.

    Example: schedlab job status 1354873856 --cluster demo.yaml
    """
    import asyncio

    from schedlab.services.clusterfile import load_cluster
    from schedlab.services.jobs import list_jobs

    loaded = load_cluster(cluster)
    rows = [r for r in asyncio.run(_listing(loaded, list_jobs)) if r["job"] == job]
    if not rows:
        err.print(f"no job {job} in the ledger of cluster {loaded.name}", highlight=False)
        raise typer.Exit(1)
    print(json.dumps(rows[0], indent=2))


@job_app.command("logs")
def job_logs_cmd(
    job: Annotated[int, typer.Argument(help="Job id (as submit --detach printed it).")],
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
    task: Annotated[int | None, typer.Option("--task", help="Only this task of the job (0, 1, …).")] = None,
) -> None:
    """Print each task's status, exit code and the tails of its stdout and stderr the hosts kept (detached jobs).

    Example: schedlab job logs 6962380443400273920 --cluster demo.yaml --task 0
    """
    import asyncio

    from schedlab.services.clusterfile import load_cluster
    from schedlab.services.jobs import job_logs

    loaded = load_cluster(cluster)
    tasks = asyncio.run(_listing(loaded, lambda ld: job_logs(ld, job)))
    if tasks is None:
        err.print(f"no job {job} in the ledger of cluster {loaded.name}", highlight=False)
        raise typer.Exit(1)
    if task is not None:
        if not 0 <= task < len(tasks):
            raise InputError("--task", f"job {job} has tasks 0..{len(tasks) - 1}, not {task}")
        tasks = [tasks[task]]
    for t in tasks:
        print(f"task {t['task']}: {t.get('status')}" + (f"  exit {t['exit_code']}" if t.get("exit_code") is not None else "")
              + (f"  attempts {t['attempts']}" if "attempts" in t else ""))
        for key in ("stdout_tail", "stderr_tail"):
            if t.get(key):
                print(f"--- {key.split('_')[0]} ---\n{t[key].rstrip()}")


ENDED_EXIT = 3  # job cancel: the job had already ended, nothing was cancelled


@job_app.command("cancel")
def job_cancel_cmd(
    job: Annotated[int, typer.Argument(help="Job id (as submit --detach printed it, or schedlab jobs lists it).")],
    cluster: Annotated[Path, typer.Option("--cluster", "-c", help="Cluster file.")],
    wait: Annotated[float, typer.Option("--wait", help="Seconds to wait for the job's GM to carry it out.")] = 10.0,
) -> None:
    """Cancel a job: its queued tasks never launch, its running ones are killed on their hosts.

    The request is durable (in the GM's log, then the job ledger): a GM that is down carries it out when it is
    back. Exit 0: cancelled, now or before, or requested; 1: no such job; 3: the job had already ended.

    Example: schedlab job cancel 1354873856 --cluster demo.yaml
    """
    import asyncio

    from schedlab.services.clusterfile import load_cluster
    from schedlab.services.jobs import cancel_job

    if wait < 0:
        raise InputError("--wait", f"must be >= 0, got {wait}")
    loaded = load_cluster(cluster)
    what, record = asyncio.run(_listing(loaded, lambda ld: cancel_job(ld, job, wait)))
    if what == "unknown":
        err.print(f"no job {job} in the ledger of cluster {loaded.name}", highlight=False)
        raise typer.Exit(1)
    if what == "ended":
        print(f"job {job} had already ended: nothing cancelled (schedlab job status {job} says how)")
        raise typer.Exit(ENDED_EXIT)
    if what == "requested":
        print(f"job {job}: cancellation requested; its GM has not carried it out within {wait:g} s (down or busy) and will when it can")
        return
    dropped = int((record or {}).get("dropped", 0))
    again = "was already cancelled" if what == "already cancelled" else "cancelled"
    print(f"job {job} {again}: {dropped} queued task{'s' if dropped != 1 else ''} never launched, the running ones killed")


async def _listing(loaded: Any, fn: Any) -> Any:
    from schedlab.services.net import BrokerUnreachable, quiet_client_logs
    from schedlab.services.supervise import safe_url

    quiet_client_logs()
    try:
        return await fn(loaded)
    except BrokerUnreachable as e:
        raise InputError(f"broker {safe_url(e.url)}", e.reason) from None
