"""`sandbox.mock()`: answer requests to the providers' real hosts, with no base_url change.

httpx requests are routed through respx; the current official SDKs use httpx2, which respx does not
patch, so its transports are patched the same way. Requests to any other host pass through.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx
import respx

from ._engine import DEFAULT_BUDGET, Engine, Exchange
from ._exceptions import UsageError
from ._scenario import Scenario
from ._transport import _HTTPX_STREAM, Journal, _stream_class, _to_response

__all__ = ["PROVIDER_HOSTS", "SandboxMock", "mock"]

PROVIDER_HOSTS = ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com")

F = TypeVar("F", bound=Callable[..., Any])


class SandboxMock:
    """A context manager and decorator that mounts the sandbox on the providers' real hosts."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.journal = Journal()
        self._router: respx.MockRouter | None = None
        self._patches: list[tuple[Any, str, Any]] = []

    def _exchange(self, request: Any) -> Exchange:
        exchange = self.engine.handle(request.method, request.url.path, request.read())
        self.journal.append(exchange)
        return exchange

    def start(self) -> None:
        if self._router is not None:
            raise UsageError("This sandbox.mock() is already active; it cannot be entered twice.")
        router = respx.mock(assert_all_called=False, assert_all_mocked=False)
        for host in PROVIDER_HOSTS:
            router.route(host=host).mock(side_effect=self._respond_httpx)
        router.route().pass_through()
        router.start()
        self._router = router
        self._patch_httpx2()

    def stop(self) -> None:
        if self._router is None:
            return
        self._router.stop()
        self._router = None
        for owner, name, original in reversed(self._patches):
            setattr(owner, name, original)
        self._patches.clear()

    def _respond_httpx(self, request: httpx.Request) -> httpx.Response:
        return _to_response(httpx, _HTTPX_STREAM, self._exchange(request), request)  # type: ignore[no-any-return]

    def _patch_httpx2(self) -> None:
        try:
            import httpx2
        except ImportError:
            return
        stream_class = _stream_class(httpx2)
        mock = self
        sync_original = httpx2.HTTPTransport.handle_request
        async_original = httpx2.AsyncHTTPTransport.handle_async_request

        def handle_request(transport: Any, request: Any) -> Any:
            if request.url.host in PROVIDER_HOSTS:
                return _to_response(httpx2, stream_class, mock._exchange(request), request)
            return sync_original(transport, request)

        async def handle_async_request(transport: Any, request: Any) -> Any:
            if request.url.host in PROVIDER_HOSTS:
                await request.aread()
                return _to_response(httpx2, stream_class, mock._exchange(request), request)
            return await async_original(transport, request)

        for owner, name, replacement in (
            (httpx2.HTTPTransport, "handle_request", handle_request),
            (httpx2.AsyncHTTPTransport, "handle_async_request", handle_async_request),
        ):
            self._patches.append((owner, name, getattr(owner, name)))
            setattr(owner, name, replacement)

    def __enter__(self) -> SandboxMock:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> SandboxMock:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

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
) -> SandboxMock:
    """Mount the sandbox on api.openai.com, api.anthropic.com and generativelanguage.googleapis.com.

    Without `scenario`, each request's model field names the scenario.
    """
    return SandboxMock(Engine(scenario, scenarios=scenarios, budget=budget))
