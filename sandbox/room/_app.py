"""The room's HTTP side, mounted beside the sandbox's own app: `/room/...` here, every other path there.

May touch: the ASGI connection it serves, and the `RoomService`. Requests to the sandbox pass
through untouched; when one carries what may be a learner's API key, the exchange the engine
produced is handed to the room after the answer has gone out, so the room never delays a learner's
model call. Every room request first brings the service's view up to date (`RoomService.fresh`), so
any worker process answers as the one that took the last change.

    GET  /room/?key=K                 sets the key as an HttpOnly cookie, redirects to /room/ (no key)
    GET  /room/                       the instructor's page          (instructor)
    GET  /room/projector              the page without anything secret, for a projector (instructor)
    GET  /room/api/state              the room as JSON               (instructor)
    GET  /room/api/events             the page's updates, live (SSE) (instructor)
    GET  /room/fragment/learner/NAME  one learner's panel, as HTML   (instructor)
    GET  /room/api/learners/NAME      one learner, as JSON           (instructor)
    DELETE /room/api/learners/NAME    free a name                    (instructor)
    POST /room/api/learners/NAME/rename {"name": NEW}, /merge {"into": OTHER}   (instructor)
    PUT  /room/api/learners/NAME/verified  a run the instructor graded: recorded as verified (instructor)
    PUT  /room/api/roster  {"names": [...]}    only these join; [] lets anyone (instructor)
    POST /room/api/key                a new instructor's key; the old one stops working (instructor)
    GET  /room/export.csv, /room/export/results.zip                  (instructor)
    POST /room/api/join  {"name": ...}          -> token, API key    (anyone; rate-limited)
    POST /room/api/runs  (Bearer token)         a grader's run       (that learner; bounded)
    GET  /room/api/me    (Bearer token)         the learner's own row
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Any

from . import _export, _page
from ._convo import api_key_of
from ._guard import RateLimit, bearer, instructor_key, same
from ._service import API_KEY_PREFIX, SINK, RoomError, RoomService

__all__ = ["PREFIX", "RoomApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX = "/room"
MAX_POST = 256 * 1024
"""Bytes in one post: a run of every challenge with every failure's rule, and one feedback text each."""
POST_TIMEOUT = 10.0
STREAM_SECONDS = 30.0
"""An event stream is closed after this long and the page reconnects at once: a server shutting down
never waits longer than this for an open page."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SECURITY = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}
_ASSETS = {"room.css": "text/css; charset=utf-8", "room.js": "text/javascript; charset=utf-8"}


class RoomApp:
    """The sandbox's ASGI app with the room beside it."""

    def __init__(
        self,
        inner: ASGIApp,
        service: RoomService,
        *,
        join_rate: float = 1.0,
        join_burst: int = 30,
        post_rate: float = 2.0,
    ) -> None:
        self.inner = inner
        self.service = service
        self.joins = RateLimit(service.store, "join", join_rate, burst=join_burst)
        """Joins per client address: a table of laptops behind one NAT joins at once; a script minting
        names is held to `join_rate` a second once past the burst (its graders join again next run)."""
        self.posts = RateLimit(service.store, "post", post_rate, burst=10)
        """Posts per learner: a grader posts once per run; `sandbox watch` a few times a minute."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self._sandbox(scope, receive, send)
            return
        try:
            await self._route(scope, receive, send, path[len(PREFIX) :])
        except RoomError as error:
            headers = {"retry-after": str(math.ceil(error.retry_after))} if error.retry_after else {}
            await _json(send, error.status, {"error": {"code": error.code, "message": error.message}}, headers)

    async def _sandbox(self, scope: Scope, receive: Receive, send: Send) -> None:
        api_key = api_key_of(scope) if scope["type"] == "http" else None
        if api_key is None or not api_key.startswith(API_KEY_PREFIX):
            await self.inner(scope, receive, send)
            return
        sink: list[tuple[float, Any]] = []
        token = SINK.set(sink)
        try:
            await self.inner(scope, receive, send)
        finally:
            SINK.reset(token)
        for at, exchange in sink:
            await self.service.record(api_key, at, exchange)

    async def _route(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        method = scope["method"]
        if path == "":
            await _send(send, 308, b"", {"location": PREFIX + "/" + _query(scope)})
            return
        if path.startswith("/static/") and method == "GET":
            await self._asset(send, path.removeprefix("/static/"))
            return
        await self.service.fresh()  # what any worker process stored until now
        if path == "/api/join" and method == "POST":
            client = scope.get("client")
            wait = await self.service.wait(self.joins, client[0] if client else "")
            if wait:
                raise RoomError(
                    429, "too_many_joins", "Too many joins from this address: wait a moment.", retry_after=wait
                )
            body = await _body(receive)
            joined = await self.service.join(body.get("name"), body.get("token"), body.get("api_key"))
            await _json(
                send,
                200,
                {"name": joined.name, "token": joined.token, "api_key": joined.api_key, "expires": joined.expires},
            )
        elif path == "/api/runs" and method == "POST":
            name = await self.service.learner_for_token(bearer(scope))
            wait = await self.service.wait(self.posts, name)
            if wait:
                raise RoomError(
                    429, "too_many_posts", "Too many posts for one learner: wait a moment.", retry_after=wait
                )
            version = await self.service.post_run(name, await _body(receive))
            await _json(send, 202, {"accepted": True, "name": name, "version": version})
        elif path == "/api/me" and method == "GET":
            name = await self.service.learner_for_token(bearer(scope))
            await _json(send, 200, {"name": name, "row": _row(self.service, name)})
        else:
            await self._instructor(scope, receive, send, method, path)

    async def _instructor(self, scope: Scope, receive: Receive, send: Send, method: str, path: str) -> None:
        given = instructor_key(scope)
        if not same(given, self.service.key):
            if path in ("/", "/index.html"):
                await _send(send, 401, _LOCKED, {"content-type": "text/html; charset=utf-8", **_SECURITY})
                return
            if given and await self.service.is_learner_token(given):
                raise RoomError(
                    403, "learner_token", "A learner's token cannot read the room: only the instructor's key can."
                )
            wrong = "That is not this room's key. " if given else ""
            raise RoomError(
                401,
                "no_key",
                f"{wrong}The instructor's page and API need the room's key (?key=, as `sandbox room` printed).",
            )
        snapshot = self.service.room.snapshot
        if path in ("/", "/index.html", "/projector") and method == "GET":
            if _query_key(scope):  # the key leaves the address bar: it is in the cookie from now on
                target = PREFIX + ("/projector" if path == "/projector" else "/")
                await _send(send, 303, b"", {"location": target, "set-cookie": self._cookie(), **_SECURITY})
                return
            base = _base_url(scope)
            html = _page.page(
                snapshot(time.time()),
                join_line=f"pytest challenges/ --room {base}{PREFIX} --name 'YOUR NAME'",
                loop_line=f"base_url={base}/v1, api_key: the one printed when you join",
                projector=path == "/projector",
            )
            await _send(send, 200, html.encode(), {"content-type": "text/html; charset=utf-8", **_SECURITY})
        elif path == "/api/key" and method == "POST":
            key = await self.service.rotate_key()
            await _json(
                send,
                200,
                {"key": key, "page": f"{_base_url(scope)}{PREFIX}/?key={key}"},
                {"set-cookie": self._cookie()},
            )
        elif path == "/api/roster" and method == "PUT":
            names = await self.service.set_roster((await _body(receive)).get("names"))
            await _json(send, 200, {"roster": names})
        elif path.startswith("/api/learners/") and path.endswith("/verified") and method == "PUT":
            name = urllib.parse.unquote(path.removeprefix("/api/learners/").removesuffix("/verified"))
            await _json(send, 200, {"name": name, "verified": await self.service.verify(name, await _body(receive))})
        elif path.startswith("/api/learners/") and path.endswith(("/rename", "/merge")) and method == "POST":
            quoted, _, action = path.removeprefix("/api/learners/").rpartition("/")
            name, body = urllib.parse.unquote(quoted), await _body(receive)
            if action == "rename":
                await _json(send, 200, {"name": await self.service.rename(name, body.get("name"))})
            else:
                await self.service.merge(name, str(body.get("into", "")))
                await _json(send, 200, {"name": body.get("into"), "merged": name})
        elif path == "/api/state" and method == "GET":
            await _json(send, 200, snapshot(time.time()))
        elif path == "/api/events" and method == "GET":
            await self._events(receive, send)
        elif path.startswith("/fragment/learner/") and method == "GET":
            detail = self._detail(path.removeprefix("/fragment/learner/"))
            await _send(
                send,
                200,
                _page.learner_panel(detail).encode(),
                {"content-type": "text/html; charset=utf-8", **_SECURITY},
            )
        elif path.startswith("/api/learners/") and method == "GET":
            await _json(send, 200, self._detail(path.removeprefix("/api/learners/")))
        elif path.startswith("/api/learners/") and method == "DELETE":
            name = urllib.parse.unquote(path.removeprefix("/api/learners/"))
            await _json(send, 200, {"removed": await self.service.remove(name), "name": name})
        elif path == "/export.csv" and method == "GET":
            headers = {
                "content-type": "text/csv; charset=utf-8",
                "content-disposition": 'attachment; filename="room.csv"',
            }
            await _send(send, 200, _export.room_csv(snapshot(time.time())), headers)
        elif path == "/export/results.zip" and method == "GET":
            headers = {"content-type": "application/zip", "content-disposition": 'attachment; filename="results.zip"'}
            await _send(send, 200, _export.results_zip(snapshot(time.time())), headers)
        else:
            raise RoomError(
                404, "not_found", f"No {method} {PREFIX}{path} in the room: see the room's page for what it serves."
            )

    def _cookie(self) -> str:
        return f"room_key={self.service.key}; Path={PREFIX}; HttpOnly; SameSite=Strict"

    def _detail(self, quoted: str) -> dict[str, Any]:
        name = urllib.parse.unquote(quoted)
        detail = self.service.room.detail(name)
        if detail is None:
            raise RoomError(404, "no_learner", f"No learner named {name[:60]!r} in this room.")
        return detail

    async def _asset(self, send: Send, name: str) -> None:
        if name not in _ASSETS:
            raise RoomError(404, "not_found", f"No asset {name[:60]!r}.")
        body = resources.files(__package__).joinpath("static", name).read_bytes()
        await _send(send, 200, body, {"content-type": _ASSETS[name], **_SECURITY, "cache-control": "no-cache"})

    async def _events(self, receive: Receive, send: Send) -> None:
        """Server-sent events: `parts`, the page's fragments that changed (see `_live`), until the page goes away."""
        headers = {"content-type": "text/event-stream; charset=utf-8", **_SECURITY, "x-accel-buffering": "no"}
        await send({"type": "http.response.start", "status": 200, "headers": _raw(headers)})
        page = self.service.live.subscribe()
        gone = asyncio.get_running_loop().create_task(_disconnected(receive))
        ends = asyncio.get_running_loop().time() + STREAM_SECONDS
        try:
            await send({"type": "http.response.body", "body": b"retry: 1000\n\n", "more_body": True})
            while not gone.done() and not self.service.closing:
                left = ends - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                try:
                    message = await asyncio.wait_for(page.next(), min(left, 1.0))
                except asyncio.TimeoutError:
                    continue
                await send(
                    {
                        "type": "http.response.body",
                        "body": f"event: parts\ndata: {message}\n\n".encode(),
                        "more_body": True,
                    }
                )
            await send({"type": "http.response.body", "body": b""})
        except OSError:  # the page went away mid-write
            pass
        finally:
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gone
            await self.service.live.unsubscribe(page)


def _row(service: RoomService, name: str) -> dict[str, Any] | None:
    return next((row for row in service.room.snapshot(time.time())["learners"] if row["name"] == name), None)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _query_key(scope: Scope) -> bool:
    return "key" in urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))


def _query(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    return f"?{query}" if query else ""


def _base_url(scope: Scope) -> str:
    host = next((value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"host"), "")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


async def _body(receive: Receive) -> dict[str, Any]:
    parts: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_POST:
                raise RoomError(413, "too_large", f"A post to the room is at most {MAX_POST} bytes.")
            parts.append(chunk)
            if not message.get("more_body", False):
                return

    try:
        await asyncio.wait_for(read(), POST_TIMEOUT)
    except asyncio.TimeoutError:
        raise RoomError(408, "too_slow", f"The post did not arrive within {POST_TIMEOUT:g} s.") from None
    try:
        data = json.loads(b"".join(parts))
    except (ValueError, RecursionError):
        raise RoomError(400, "not_json", "The room takes a JSON object.") from None
    if not isinstance(data, dict):
        raise RoomError(400, "not_json", "The room takes a JSON object.")
    return data


def _raw(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


async def _send(send: Send, status: int, body: bytes, headers: dict[str, str]) -> None:
    all_headers = {**headers, "content-length": str(len(body))}
    await send({"type": "http.response.start", "status": status, "headers": _raw(all_headers)})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
    body = json.dumps(data, ensure_ascii=False).encode()
    await _send(
        send, status, body, {"content-type": "application/json", "cache-control": "no-store", **(headers or {})}
    )


_LOCKED = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Workshop room</title></head>
<body><h1>Workshop room</h1><p>This is the instructor's page of a workshop room. Open the URL that
<code>sandbox room</code> printed: it ends in <code>?key=...</code>.</p>
<p>Learners join from their grader: <code>pytest challenges/ --room URL --name NAME</code>.</p></body></html>"""
