"""Random input thrown at every endpoint of a running cluster (real processes): it stays up and unchanged.

* **Strangers** (no credentials, or made-up ones) send random bytes, random
  JSON and well-formed envelopes of every message type to every node's
  ``/v1/message`` and ``/v1/status``: every answer is a 4xx with one line,
  and no node's task state changes (nothing queued, launched or known).
* **An authenticated peer** with random, mostly malformed envelopes: every
  answer is 200 or a one-line 4xx — never a 5xx, never a dead service.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.services import supervise
from schedlab.services.auth import HEADERS, Signer
from schedlab.services.clusterfile import load_cluster
from schedlab.services.remote import fetch_statuses
from schedlab.services.wire import SCHEMAS
from tests.services.helpers import write_cluster

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ADDRESS = st.sampled_from(["gm:0", "lm:0", "host:0", "workers", "client", "lm:9", "x"]) | st.text(max_size=10)
ENVELOPE = st.fixed_dictionaries(
    {"v": st.sampled_from([1, 1, 1, 2, 0]), "type": st.sampled_from(sorted(SCHEMAS)) | st.text(max_size=12),
     "src": ADDRESS, "dst": ADDRESS, "body": st.dictionaries(st.text(max_size=10), JSON, max_size=5)},
    optional={"seq": st.tuples(st.integers(0, 2**31), st.integers(0, 2**31))},
)
BODY = st.binary(max_size=600) | JSON.map(lambda j: json.dumps(j).encode()) | st.lists(ENVELOPE, min_size=1, max_size=3).map(
    lambda es: json.dumps(es).encode())


@pytest.fixture(scope="module")
def cluster(broker, tmp_path_factory):
    path = write_cluster(tmp_path_factory.mktemp("fuzz"), gms=1, lms=1, workers=4)
    loaded = load_cluster(path)
    asyncio.run(supervise.up(loaded, path, timeout=60))
    try:
        urls = [loaded.spec.gms[0].url, loaded.spec.lms[0].url, loaded.spec.lms[0].hosts[0].url]
        yield loaded, urls
    finally:
        asyncio.run(supervise.down(loaded, path))


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    req = urllib.request.Request(url + "/v1/message", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def _task_state(loaded) -> list[tuple]:
    out = []
    for st_ in asyncio.run(fetch_statuses(loaded)):
        assert "error" not in st_, st_
        out.append((st_["role"], st_.get("tasks_known"), st_.get("waiting"), st_.get("running"), st_.get("launched"), st_.get("started")))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(node=st.integers(0, 2), body=BODY, headers=st.sampled_from(["none", "random", "wrong-secret"]), junk=st.dictionaries(
    st.sampled_from(HEADERS), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40), max_size=4))
def test_strangers_get_401_and_change_nothing(cluster, node, body, headers, junk):
    loaded, urls = cluster
    if not hasattr(test_strangers_get_401_and_change_nothing, "before"):
        test_strangers_get_401_and_change_nothing.before = _task_state(loaded)
    h = {"none": {}, "random": junk,
         "wrong-secret": Signer("z" * 32, "gm:0").headers(body)}[headers]
    status, text = _post(urls[node], body, h)
    assert status in (400, 401, 413), (status, text)  # 400: the HTTP layer's own refusals
    assert "\n" not in text.strip()
    assert _task_state(loaded) == test_strangers_get_401_and_change_nothing.before


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(node=st.integers(0, 2), body=BODY)
def test_an_authenticated_peer_with_garbage_never_breaks_a_service(cluster, node, body):
    loaded, urls = cluster
    status, text = _post(urls[node], body, Signer(loaded.secret, "gm:0").headers(body))
    assert status in (200, 400, 404, 413), (status, text)
    if status != 200:
        assert "\n" not in text.strip() and text.strip()
    with urllib.request.urlopen(urls[node] + "/v1/health", timeout=5) as resp:
        assert resp.status == 200
