"""Prometheus text exposition of one service node: ``GET /metrics`` on every GM, LM and worker host.

Each node process has its own :class:`prometheus_client.CollectorRegistry`
(several nodes share a process with ``cluster up --embedded``) holding one
collector that reads the node's :meth:`status` at scrape time — the very
numbers ``cluster status`` and the dashboard's live view show, so the three
agree — and its histograms (:mod:`~.timings`). Every sample carries the labels
``cluster``, ``role`` and ``id``.

==========================================  =======  ==============================================
metric                                      roles    what
==========================================  =======  ==============================================
schedlab_placements_total                   gm       launch requests the LMs accepted
schedlab_launch_requests_total              gm       launch requests sent
schedlab_rejected_launch_requests_total     gm       refused by an LM (a stale view: an inconsistency)
schedlab_repartition_requests_total         gm       requests for another partition's workers
schedlab_waiting_tasks                      gm       tasks queued at the GM (its queue length)
schedlab_heartbeat_age_seconds              gm, lm   since the last LM state update (gm: the oldest)
schedlab_launches_total                     lm       tasks launched on worker hosts
schedlab_inconsistencies_total              lm       launch requests refused (workers not free)
schedlab_repartitions_total                 lm       workers lent to another LM's GM requests
schedlab_lent_workers                       lm       lent now
schedlab_running_tasks                      lm, host running now
schedlab_task_starts_total                  host     runs started
schedlab_task_ends_total                    host     runs ended
schedlab_task_failures_total                host     runs ended otherwise than ok (exit code, error)
schedlab_preemptions_total                  host     runs killed for fair sharing
schedlab_workers                            host     workers of the host
schedlab_recovery_events_total{event}       gm, lm   recovery steps taken (tasks found running, …)
schedlab_refused_input_total{reason}        all      input refused before it was acted on
schedlab_handler_errors_total               all      handler failures (a bug or bad input)
schedlab_messages_sent_total{type}          all      messages sent by type
schedlab_uptime_seconds                     all      since the node started serving
schedlab_allocation_seconds                 host     histogram: start − arrival at the GM
schedlab_allocation_component_seconds       all      histogram per component, the four (see timings)
==========================================  =======  ==============================================

Access: ``Authorization: Bearer <token>`` with the token derived from the
cluster's secret (:func:`~.auth.metrics_token`; ``schedlab cluster metrics
FILE`` prints it with a Prometheus scrape configuration). The token only reads
metrics: it cannot sign messages.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from schedlab.services.timings import Histogram

# (metric, status key, help) per kind and role
COUNTERS = {
    "gm": [("launch_requests", "requests", "Launch requests sent to LMs."),
           ("rejected_launch_requests", "rejected_requests", "Launch requests an LM refused (a stale view: an inconsistency)."),
           ("repartition_requests", "repartition_requests", "Launch requests for another partition's workers.")],
    "lm": [("launches", "launched", "Tasks launched on worker hosts."),
           ("inconsistencies", "inconsistencies", "Launch requests refused because the workers were not free."),
           ("repartitions", "repartitions", "Workers lent to another LM's GM requests."),
           ("heartbeats", "heartbeats", "State-update rounds sent to the GMs.")],
    "worker": [("task_starts", "started", "Task runs started."),
               ("task_ends", "finished", "Task runs ended."),
               ("task_failures", "failed", "Task runs that ended otherwise than ok (a non-zero exit, an error, a timeout)."),
               ("preemptions", "preempted", "Task runs killed for fair sharing."),
               ("refused_launches", "refused_launches", "Launches refused (unknown task, busy worker, missing constraints).")],
}  # fmt: skip
GAUGES = {
    "gm": [("waiting_tasks", "waiting", "Tasks queued at the GM."),
           ("heartbeat_age_seconds", "last_heartbeat_age", "Seconds since the oldest last state update of an LM.")],
    "lm": [("running_tasks", "running", "Tasks running on this LM's workers."),
           ("lent_workers", "lent_workers", "Workers lent to another partition's GM now."),
           ("heartbeat_age_seconds", "last_heartbeat_age", "Seconds since this LM's last state-update round.")],
    "worker": [("running_tasks", "running", "Task runs in progress."), ("workers", "workers", "Workers of this host.")],
}  # fmt: skip
RECOVERY = {
    "gm": ("tasks_found_running", "tasks_found_completed", "tasks_requested_again", "jobs_delivered_again", "lm_suspensions",
           "lm_takeovers_seen", "requests_in_doubt", "doubt_requested_again", "tasks_adopted"),
    "lm": ("hosts_down", "hosts_rejoined", "tasks_relaunched", "launches_handed_back", "launches_in_doubt", "tasks_adopted_from_hosts",
           "gm_recoveries_served", "lost_runs_stopped", "standby_took_over"),
    "worker": (),
}


class NodeCollector:
    """The metrics of one node, read from ``status()`` and ``histograms()`` at each scrape.

    ``histograms()``: metric name -> (its label, or None for one histogram; label value -> histogram)."""

    def __init__(self, cluster: str, role: str, ident: int, status: Callable[[], dict[str, Any]],
                 histograms: Callable[[], dict[str, tuple[str | None, dict[str, Histogram]]]]) -> None:
        self.labels = {"cluster": cluster, "role": role, "id": str(ident)}
        self.role = role
        self.status = status
        self.histograms = histograms

    def _family(self, cls: Any, name: str, doc: str, extra: tuple[str, ...] = ()) -> Any:
        return cls(f"schedlab_{name}", doc, labels=[*self.labels, *extra])

    def collect(self) -> Iterator[Metric]:
        st = self.status()
        base = list(self.labels.values())
        for name, key, doc in COUNTERS.get(self.role, ()):
            if key in st:
                f = self._family(CounterMetricFamily, name, doc)
                f.add_metric(base, float(st[key]))
                yield f
        if self.role == "gm":
            f = self._family(CounterMetricFamily, "placements", "Launch requests the LMs accepted (tasks placed).")
            f.add_metric(base, float(st.get("requests", 0) - st.get("rejected_requests", 0)))
            yield f
        for name, key, doc in GAUGES.get(self.role, ()):
            if st.get(key) is not None:
                f = self._family(GaugeMetricFamily, name, doc)
                f.add_metric(base, float(st[key]))
                yield f
        rec = self._family(CounterMetricFamily, "recovery_events", "Recovery steps this node took, by event.", ("event",))
        for key in RECOVERY.get(self.role, ()):
            if key in st:
                rec.add_metric([*base, key], float(st[key]))
        yield rec
        ref = self._family(CounterMetricFamily, "refused_input", "Input refused before it was acted on, by reason.", ("reason",))
        for reason, n in sorted(st.get("refused", {}).items()):
            ref.add_metric([*base, reason], float(n))
        yield ref
        err = self._family(CounterMetricFamily, "handler_errors", "Handler failures (a bug or bad input); the node kept running.")
        err.add_metric(base, float(st.get("handler_errors", 0)))
        yield err
        sent = self._family(CounterMetricFamily, "messages_sent", "Messages sent, by type.", ("type",))
        for kind, n in sorted(st.get("messages_sent", {}).items()):
            sent.add_metric([*base, kind], float(n))
        yield sent
        up = self._family(GaugeMetricFamily, "uptime_seconds", "Seconds since the node started serving.")
        up.add_metric(base, float(st.get("uptime", 0.0)))
        yield up
        for name, (label, by_label) in self.histograms().items():
            h = self._family(HistogramMetricFamily, name, HISTOGRAM_HELP[name], (label,) if label else ())
            for value, hist in by_label.items():
                buckets = [(_bound(b), float(n)) for b, n in hist.cumulative()]
                h.add_metric([*base, value] if label else base, buckets, hist.sum)
            yield h


HISTOGRAM_HELP = {
    "allocation_seconds": "Allocation time: a task's start on its worker minus its job's arrival at the GM.",
    "allocation_component_seconds": "Spans of allocation time ending at this node, by component (a span from another node "
                                    "is measured with that node's stamp, carried with the task).",
}


def _bound(b: float) -> str:
    return "+Inf" if b == float("inf") else repr(b)


def node_collector(cluster: str, role: str, ident: int, status: Callable[[], dict[str, Any]], node: Any) -> NodeCollector:
    """The collector of a GM, LM or worker-host node (:mod:`~.nodes`): its status and its timings."""

    def histograms() -> dict[str, tuple[str | None, dict[str, Histogram]]]:
        timer = getattr(node, "timer", None)
        if timer is not None:
            return {"allocation_component_seconds": ("component", timer.components)}
        host = getattr(node, "host", None)
        if role == "worker" and host is not None:
            return {"allocation_seconds": (None, {"": host.allocation}), "allocation_component_seconds": ("component", host.components)}
        return {}

    return NodeCollector(cluster, role, ident, status, histograms)


class NodeMetrics:
    """One node's registry and what ``GET /metrics`` answers (after checking the bearer token)."""

    def __init__(self, collector: NodeCollector, token: str) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._expected = f"Bearer {token}".encode()

    def authorized(self, header: str | None) -> bool:
        return header is not None and hmac.compare_digest(header.encode(), self._expected)

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
