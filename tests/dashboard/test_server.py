"""The dashboard process: its JSON API, bad requests and bad inputs answered while it keeps serving, the token."""

from __future__ import annotations

import json
from pathlib import Path


def test_api_serves_runs_series_and_the_vendored_chart_library(store: Path, dashboard_of) -> None:
    d = dashboard_of("--results", str(store))
    status, body = d.get("/api/runs")
    assert status == 200 and len(body["runs"]) == 3 and body["problems"] == []
    ids = ",".join(r["id"] for r in body["runs"])
    status, cdf = d.get(f"/api/cdf?metric=jrt_delay&runs={ids}")
    assert status == 200 and {p["run"] for p in cdf["points"]} == {r["id"] for r in body["runs"]}
    import urllib.request

    for lib in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        with urllib.request.urlopen(d.url + f"static/vendor/{lib}", timeout=10) as r:
            assert r.status == 200 and len(r.read()) > 50_000


def test_bad_requests_and_inputs_get_one_message_and_the_server_keeps_serving(store: Path, tmp_path: Path, dashboard_of) -> None:
    other = tmp_path / "old" / "summary.json"
    other.parent.mkdir()
    other.write_text(json.dumps({"scheduler": "megha", "trace": "t", "workers": 3, "seed": 0, "tasks": 1}))
    not_store = tmp_path / "plain"
    not_store.mkdir()
    d = dashboard_of("--results", str(store), "--results", str(not_store), "--summary", str(other))
    status, body = d.get("/api/runs")
    assert status == 200 and len(body["runs"]) == 3
    assert [p["where"] for p in body["problems"]] == [str(not_store), str(other)]
    status, err = d.get("/api/cdf?metric=jrt_delay&runs=nope")
    assert status == 400 and err == {"error": "runs: no run 'nope' in the loaded results"}
    status, err = d.get("/api/percentiles?metric=bogus&runs=" + body["runs"][0]["id"])
    assert status == 400 and "no percentiles for 'bogus'" in err["error"]
    assert d.get("/api/runs")[0] == 200  # still serving
    log = d.log.read_text()
    assert f"{not_store}: not a results store" in log and f"{other}: not a run summary of this schedlab version" in log
    assert "no run 'nope'" in log and "Traceback" not in log


def test_a_token_once_given_is_required_of_every_request(store: Path, dashboard_of) -> None:
    d = dashboard_of("--results", str(store), "--token", "s3cret")  # a token given is required even on loopback
    assert d.url.endswith("?token=s3cret")
    base = d.url.split("?")[0]
    d.url = base
    status, _ = d.get("/api/runs")
    assert status == 401
    status, body = d.get("/api/runs?token=s3cret")
    assert status == 200 and len(body["runs"]) == 3
    status, _ = d.get("/api/runs?token=wrong")
    assert status == 401


def test_a_port_in_use_is_one_line_and_exit_2(store: Path, tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "schedlab", "dashboard", "--results", str(store), "--port", str(port)],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr


def test_off_loopback_a_token_is_always_required(monkeypatch) -> None:
    from schedlab.dashboard.server import TOKEN_ENV, is_loopback, resolve_token

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("dash.example.org")
    assert resolve_token("127.0.0.1", None) is None  # loopback: open, as a local development server
    made = resolve_token("0.0.0.0", None)
    assert made and len(made) >= 24 and made != resolve_token("0.0.0.0", None)  # generated, random
    assert resolve_token("0.0.0.0", "given") == "given"
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert resolve_token("0.0.0.0", None) == "from-env" and resolve_token("127.0.0.1", None) == "from-env"
