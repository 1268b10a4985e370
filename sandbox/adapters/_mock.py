"""`sandbox.mock()`: answer requests to the providers' real hosts, with no base_url change.

httpx requests are routed through respx; the current official SDKs use httpx2, which respx does not
patch, so its transports are patched the same way. Requests to any other host pass through.

Mounts may nest, overlap, stop in any order, and live in different threads and asyncio tasks. The
patch is installed once, when the first mount starts, and restored when the last one stops. Each
request goes to the newest mount active in its own context (a context variable: a thread's own, or
the one an asyncio task copied when it was created). A request from a context with no mount of its
own goes to the one mount that is active, or, when several are active elsewhere, is refused with a
400 that says so: guessing would answer it from another test's script. Nothing is ever passed on to
a real provider host while any mount is active.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
import respx

from .._exceptions import UsageError
from ..engine._engine import DEFAULT_BUDGET, Echo, Engine, Exchange
from ..engine._scenario import Scenario
from ..engine.faults import Fault
from ..wire import Rule, get_wire_format, route
from ._expectations import unmet
from ._guard import PROVIDER_HOSTS, cloud_host, is_provider_host
from ._journal import Journal
from ._transport import _HTTPX_STREAM, _stream_class, _to_response, answer_request

__all__ = ["PROVIDER_HOSTS", "SandboxMock", "mock"]

F = TypeVar("F", bound=Callable[..., Any])

_in_context: contextvars.ContextVar[tuple[SandboxMock, ...]] = contextvars.ContextVar("sandbox_mounts", default=())
"""The mounts started in this context, oldest first (stopped ones are skipped when looked up)."""


class _Patch:
    """The one patch of httpx (via respx) and httpx2 that every mount shares, with a reference count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active: list[SandboxMock] = []
        self._router: respx.MockRouter | None = None
        self._originals: list[tuple[Any, str, Any]] = []

    def add(self, mount: SandboxMock) -> None:
        with self.lock:
            if not self.active:
                self._install()
            self.active.append(mount)

    def remove(self, mount: SandboxMock) -> None:
        with self.lock:
            if mount not in self.active:
                return
            self.active.remove(mount)
            if not self.active:
                self._uninstall()

    def mount_for_this_context(self) -> SandboxMock | None | str:
        """The mount that answers a request made here; None: no mount at all; a str: why it is refused."""
        for mount in reversed(_in_context.get()):
            if mount.active:
                return mount
        with self.lock:
            active = list(self.active)
        if len(active) == 1:
            return active[0]
        if not active:
            return None
        return (
            f"sandbox: {len(active)} sandbox.mock() mounts are active in other threads or tasks, and none in "
            "the one that sent this request, so which script should answer it is unknown. Enter "
            "sandbox.mock() in the thread or task that makes the request (asyncio tasks created inside "
            "the `with` block inherit it), or use one mount for all of them."
        )

    def _install(self) -> None:
        router = respx.mock(assert_all_called=False, assert_all_mocked=False)
        for host in PROVIDER_HOSTS:
            router.route(host=host).mock(side_effect=_respond_httpx)
        router.route(host__regex=cloud_host().pattern).mock(side_effect=_respond_httpx)
        router.route().pass_through()
        router.start()
        self._router = router
        self._patch_httpx2()

    def _uninstall(self) -> None:
        if self._router is not None:
            self._router.stop()
            self._router = None
        for owner, name, original in reversed(self._originals):
            setattr(owner, name, original)
        self._originals.clear()

    def _patch_httpx2(self) -> None:
        try:
            import httpx2
        except ImportError:
            return
        stream_class = _stream_class(httpx2)
        sync_original = httpx2.HTTPTransport.handle_request
        async_original = httpx2.AsyncHTTPTransport.handle_async_request

        def handle_request(transport: Any, request: Any) -> Any:
            if is_provider_host(request.url.host):
                answer = _answer(request, request.read())
                if answer is not None:
                    return _to_response(httpx2, stream_class, answer, request)
            return sync_original(transport, request)

        async def handle_async_request(transport: Any, request: Any) -> Any:
            if is_provider_host(request.url.host):
                answer = _answer(request, await request.aread())
                if answer is not None:
                    return _to_response(httpx2, stream_class, answer, request)
            return await async_original(transport, request)

        for owner, name, replacement in (
            (httpx2.HTTPTransport, "handle_request", handle_request),
            (httpx2.AsyncHTTPTransport, "handle_async_request", handle_async_request),
        ):
            self._originals.append((owner, name, getattr(owner, name)))
            setattr(owner, name, replacement)


_PATCH = _Patch()


def _answer(request: Any, body: bytes) -> Exchange | None:
    """The exchange for a request to a provider host; None when no mount is active (pass it on)."""
    mount = _PATCH.mount_for_this_context()
    if mount is None:
        return None
    if isinstance(mount, str):
        method, path = request.method, request.url.path
        found = route(path)
        wire = found.wire if found else get_wire_format("openai")
        error = wire.error(400, mount, rule=Rule.MALFORMED, code="sandbox_ambiguous_mock")
        headers = {"content-type": "application/json", **error.headers}
        return Exchange(method, path, error.status, headers, (error.body,), body, wire.name, error=error)
    return answer_request(mount.engine, mount.journal, request, body)


def _respond_httpx(request: httpx.Request) -> httpx.Response:
    answer = _answer(request, request.read())
    if answer is None:  # every mount stopped while this request was on its way: it is not ours to answer
        raise UsageError("sandbox.mock() was stopped while this request was being sent; send it again.")
    return _to_response(httpx, _HTTPX_STREAM, answer, request)  # type: ignore[no-any-return]


class SandboxMock:
    """A context manager and decorator that mounts the sandbox on the providers' real hosts.

    `strict`: leaving the block (without an exception already on its way) raises `AssertionError`
    naming each scripted step no request reached and each request no step answered (`unmet()`).
    """

    def __init__(self, engine: Engine, *, strict: bool = False) -> None:
        self.engine = engine
        self.journal = Journal()
        self.strict = strict
        self.active = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self.active:
                raise UsageError(
                    "This sandbox.mock() is already active; it cannot be entered twice. Create one "
                    "sandbox.mock() per `with` block (they may nest, and each thread or task may have its own)."
                )
            self.active = True
        _in_context.set((*_in_context.get(), self))
        _PATCH.add(self)

    def stop(self) -> None:
        with self._lock:
            if not self.active:
                return
            self.active = False
        _in_context.set(tuple(mount for mount in _in_context.get() if mount is not self))
        _PATCH.remove(self)

    def unmet(self) -> list[str]:
        """What the script foresaw and the journal does not show: unplayed steps, and requests that no
        step answered (a refusal no scripted fault explains). Empty when everything played."""
        return unmet(self.engine, self.journal)

    def check(self) -> None:
        """Raise `AssertionError` naming everything `unmet()` lists; nothing when it is empty."""
        __tracebackhide__ = True
        problems = self.unmet()
        if problems:
            listing = "\n".join(f"- {problem}" for problem in problems)
            raise AssertionError(
                f"sandbox: the script and the requests did not meet:\n{listing}\n"
                "journal.transcript() shows every exchange. If this is on purpose, mount with strict=False "
                "(the fixture: @pytest.mark.sandbox(strict=False))."
            )

    def __enter__(self) -> SandboxMock:
        self.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop()
        if self.strict and exc_type is None:
            self.check()

    async def __aenter__(self) -> SandboxMock:
        self.start()
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        self.__exit__(exc_type, *exc)

    def __call__(self, func: F) -> F:
        """Use as a decorator: the sandbox is mounted while `func` runs (sync or async)."""
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await func(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def mock(
    scenario: Scenario | str | None = None,
    *,
    budget: int = DEFAULT_BUDGET,
    scenarios: Mapping[str, Scenario] | None = None,
    faults: Sequence[Fault] | str | None = None,
    echo: Echo = "faithful",
    strict: bool = False,
) -> SandboxMock:
    """Mount the sandbox on api.openai.com, api.anthropic.com and generativelanguage.googleapis.com.

    Without `scenario`, each request's model field names the scenario. Mounts may nest and overlap
    across threads and tasks: each request goes to the mount active in its own context. `faults`
    play on every conversation, and `echo` is as in `transport(echo=...)`. `strict=True` fails the
    block's exit on unplayed steps and on requests no step answered (`SandboxMock.check()`).
    """
    if not isinstance(strict, bool):
        raise UsageError(f"strict={strict!r}: use True or False.")
    return SandboxMock(Engine(scenario, scenarios=scenarios, budget=budget, faults=faults, echo=echo), strict=strict)
