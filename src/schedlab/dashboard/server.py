"""``schedlab dashboard``: one local web app (aiohttp) serving the results explorer and the live cluster view.

Routes: ``/`` the explorer page; ``/live`` the live view of the ``--cluster``
(:mod:`.live`); ``/static/…`` their scripts, style and the vendored chart library
(Vega, Vega-Lite and Vega-Embed, BSD-3: ``static/vendor``, so no CDN is needed —
the app works with no network); ``/api/runs`` (``?reload=1`` reads the stores
again), ``/api/cdf``, ``/api/percentiles``, ``/api/utilization``, ``/api/constraint_load``
(JSON, see :mod:`.explorer`); ``/api/live`` (the live state, JSON) and ``/api/live/stream``
(the same, pushed as server-sent events after every read of the cluster).

Access: bound to 127.0.0.1 by default, where anything on the machine may read
it, as with any local development server. Bound to another address, every
request needs the token (``--token`` or ``SCHEDLAB_DASHBOARD_TOKEN``; one is
generated and printed when neither is given): as ``?token=`` in the URL once
(the answer sets a cookie for the rest) or as ``Authorization: Bearer``.

A bad request (an unknown run, an unknown metric) is a JSON ``{"error": …}`` with
status 400 and one log line; the server keeps serving. Inputs that could not be
read at start are listed by ``/api/runs`` (``problems``), shown on the page and
logged once each.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from schedlab.dashboard.explorer import Catalog
from schedlab.dashboard.live import LiveMonitor
from schedlab.errors import InputError

log = logging.getLogger("schedlab.dashboard")
TOKEN_ENV = "SCHEDLAB_DASHBOARD_TOKEN"
COOKIE = "schedlab_dashboard"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def static_dir() -> Path:
    return Path(str(resources.files("schedlab.dashboard") / "static"))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ids(request: web.Request) -> list[str]:
    raw = request.query.get("runs", "")
    return [r for r in raw.split(",") if r]


def make_app(catalog: Catalog, token: str | None = None, monitor: LiveMonitor | None = None) -> web.Application:
    """The dashboard's application over ``catalog`` (and ``monitor``'s cluster); ``token``: required of every
    request when given."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token is not None:
            given = request.query.get("token") or request.cookies.get(COOKIE) or request.headers.get("Authorization", "").removeprefix("Bearer ")
            if not given or not hmac.compare_digest(given, token):
                log.warning("refused %s %s from %s: no valid token", request.method, request.path, request.remote)
                raise web.HTTPUnauthorized(text="schedlab dashboard: this address needs the token (?token=…)")
        try:
            response = await handler(request)
        except InputError as e:
            log.warning("bad request %s: %s", request.path_qs, e)
            return web.json_response({"error": str(e)}, status=400)
        if token is not None and request.query.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return response

    async def index(_request: web.Request) -> web.StreamResponse:
        if monitor is not None and not catalog.runs and not catalog.problems:
            raise web.HTTPFound("/live")
        return web.FileResponse(static_dir() / "index.html")

    async def live_page(_request: web.Request) -> web.StreamResponse:
        return web.FileResponse(static_dir() / "live.html")

    async def live_state(_request: web.Request) -> web.StreamResponse:
        if monitor is None:
            return web.json_response({"error": "no cluster: start the dashboard with --cluster FILE"}, status=404)
        return web.json_response(monitor.latest or {"cluster": monitor.loaded.name, "pending": True})

    async def live_stream(request: web.Request) -> web.StreamResponse:
        if monitor is None:
            return web.json_response({"error": "no cluster: start the dashboard with --cluster FILE"}, status=404)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        q = monitor.subscribe()
        try:
            while True:
                try:
                    text = await asyncio.wait_for(q.get(), timeout=15.0)
                    await resp.write(f"data: {text}\n\n".encode())
                except TimeoutError:
                    await resp.write(b": keep-alive\n\n")
        except ConnectionResetError:  # the page went away
            pass
        finally:
            monitor.unsubscribe(q)
        return resp

    async def runs(request: web.Request) -> web.StreamResponse:
        if request.query.get("reload"):
            catalog.reload()
            _log_problems(catalog)
        return web.json_response({
            "runs": [r.row() for r in catalog.runs.values()],
            "problems": [{"where": p.where, "what": p.what} for p in catalog.problems],
        })  # fmt: skip

    # handlers that read tables (or a trace) run off the event loop: the live view's pushes go on meanwhile
    async def cdf(request: web.Request) -> web.StreamResponse:
        return web.json_response(await asyncio.to_thread(catalog.cdf, _ids(request), request.query.get("metric", "jrt_delay")))

    async def percentiles(request: web.Request) -> web.StreamResponse:
        q = request.query
        return web.json_response(catalog.percentiles(_ids(request), q.get("metric", "jrt_delay"), q.get("baseline") or None))

    async def utilization(request: web.Request) -> web.StreamResponse:
        return web.json_response(await asyncio.to_thread(catalog.utilization, _ids(request)))

    async def constraint_load(request: web.Request) -> web.StreamResponse:
        return web.json_response(await asyncio.to_thread(catalog.constraint_load, request.query.get("run", "")))

    app = web.Application(middlewares=[guard])
    if monitor is not None:

        async def start_monitor(_app: web.Application) -> None:
            await monitor.start()

        async def stop_monitor(_app: web.Application) -> None:
            await monitor.stop()

        app.on_startup.append(start_monitor)
        app.on_cleanup.append(stop_monitor)
    app.router.add_get("/", index)
    app.router.add_get("/live", live_page)
    app.router.add_get("/api/live", live_state)
    app.router.add_get("/api/live/stream", live_stream)
    app.router.add_get("/api/runs", runs)
    app.router.add_get("/api/cdf", cdf)
    app.router.add_get("/api/percentiles", percentiles)
    app.router.add_get("/api/utilization", utilization)
    app.router.add_get("/api/constraint_load", constraint_load)
    app.router.add_static("/static/", static_dir())
    return app


def _log_problems(catalog: Catalog) -> None:
    for p in catalog.problems:
        log.warning("%s", p)


def resolve_token(host: str, token: str | None) -> str | None:
    """The token requests must carry: none on a loopback address unless one is given, else the given one,
    ``$SCHEDLAB_DASHBOARD_TOKEN`` or a new random one."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    return token


def serve(catalog: Catalog, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
          announce: Callable[[str], Any] = print, monitor: LiveMonitor | None = None) -> None:  # fmt: skip
    """Serve until interrupted; ``announce(url)`` once listening (the URL carries the token, if any)."""
    _log_problems(catalog)

    async def main() -> None:
        runner = web.AppRunner(make_app(catalog, token, monitor), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise InputError(f"--port {port}", f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        bound = runner.addresses[0][1] if runner.addresses else port
        shown = f"[{host}]" if ":" in host else host
        announce(f"http://{shown}:{bound}/" + (f"?token={token}" if token else ""))
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
