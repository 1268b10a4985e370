"""In-process doors: an httpx transport and its httpx2 twin, both over one `Engine`.

`httpx.MockTransport` is the model: a handler, sync and async alike. Every exchange goes into a
journal, so a grader can inspect what reached the provider rather than trust the caller's objects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import httpx

from ..engine._engine import DEFAULT_BUDGET, Echo, Engine, Exchange, caller_key
from ..engine._scenario import Scenario
from ..engine.faults import Delivery, Fault
from ..engine.faults._delivery import async_frames, sync_frames
from ._journal import DEFAULT_JOURNAL_BYTES, DEFAULT_JOURNAL_SIZE, Journal

__all__ = ["Httpx2Transport", "Journal", "SandboxTransport", "httpx2_transport", "transport"]


def _stream_class(module: ModuleType) -> type:
    class ChunkStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
        """The SSE frames one at a time, so the client's incremental parser is exercised for real; with a
        fault's `Delivery`, slowed or broken off where it says (the library's own RemoteProtocolError)."""

        def __init__(self, chunks: tuple[bytes, ...], delivery: Delivery | None = None) -> None:
            self._chunks = chunks
            self._delivery = delivery

        def __iter__(self) -> Iterator[bytes]:
            if self._delivery is None:
                yield from self._chunks
            else:
                yield from sync_frames(self._chunks, self._delivery, module.RemoteProtocolError)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self._delivery is None:
                for chunk in self._chunks:
                    yield chunk
            else:
                async for chunk in async_frames(self._chunks, self._delivery, module.RemoteProtocolError):
                    yield chunk

    return ChunkStream


_HTTPX_STREAM = _stream_class(httpx)


def answer_request(engine: Engine, journal: Journal, request: Any, body: bytes) -> Exchange:
    """Answer an httpx or httpx2 request (they share every attribute read here), whose body is `body`."""
    query = request.url.query
    exchange = engine.handle(
        request.method,
        request.url.path,
        body,
        client=caller_key(),
        query=query.decode("latin-1") if isinstance(query, bytes) else query,
        headers=_headers(request.headers),
    )
    journal.append(exchange)
    return exchange


def _headers(headers: Any) -> dict[str, str]:
    """`dict(headers.items())` of an httpx or httpx2 `Headers` (lower-case names, a repeated header's
    values joined by ", "), with its encoding read once rather than twice a header."""
    encoding = headers.encoding
    found: dict[str, str] = {}
    for key, value in headers.raw:
        name, text = key.lower().decode(encoding), value.decode(encoding)
        found[name] = f"{found[name]}, {text}" if name in found else text
    return found


class _Door:
    def __init__(
        self,
        engine: Engine,
        journal_size: int | None = DEFAULT_JOURNAL_SIZE,
        journal_bytes: int | None = DEFAULT_JOURNAL_BYTES,
    ) -> None:
        self.engine = engine
        self.journal = Journal(journal_size, journal_bytes)

    def _exchange(self, request: Any, body: bytes) -> Exchange:
        return answer_request(self.engine, self.journal, request, body)


class SandboxTransport(_Door, httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport (sync and async) answering with the sandbox; the path picks the wire format."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self._exchange(request, request.read())
        response: httpx.Response = _to_response(httpx, _HTTPX_STREAM, exchange, request)
        return response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = self._exchange(request, await request.aread())
        response: httpx.Response = _to_response(httpx, _HTTPX_STREAM, exchange, request)
        return response


def _to_response(module: Any, stream_class: type, exchange: Exchange, request: Any) -> Any:
    if exchange.delivery is not None:
        if exchange.delivery.cut_after == 0:  # cut before any byte: no response at all, as over a socket
            raise module.RemoteProtocolError("Server disconnected without sending a response (a sandbox fault cut it).")
        stream = stream_class(exchange.chunks, exchange.delivery)
        return module.Response(exchange.status, headers=exchange.headers, stream=stream, request=request)
    if exchange.is_stream:
        return module.Response(
            exchange.status, headers=exchange.headers, stream=stream_class(exchange.chunks), request=request
        )
    return module.Response(exchange.status, headers=exchange.headers, content=exchange.body, request=request)


Faults = Sequence[Fault] | str | None


def _engine(
    scenario: Scenario | str | None,
    engine: Engine | None,
    budget: int,
    scenarios: Mapping[str, Scenario] | None,
    faults: Faults = None,
    echo: Echo = "faithful",
) -> Engine:
    if engine is not None:
        if faults or echo != "faithful":
            from .._exceptions import UsageError

            raise UsageError(
                "Pass faults= and echo= to the Engine you hand over (Engine(faults=..., echo=...)), not beside engine=."
            )
        return engine
    return Engine(scenario, scenarios=scenarios, budget=budget, faults=faults, echo=echo)


def transport(
    scenario: Scenario | str | None = None,
    *,
    budget: int = DEFAULT_BUDGET,
    scenarios: Mapping[str, Scenario] | None = None,
    engine: Engine | None = None,
    journal_size: int | None = DEFAULT_JOURNAL_SIZE,
    journal_bytes: int | None = DEFAULT_JOURNAL_BYTES,
    faults: Faults = None,
    echo: Echo = "faithful",
) -> SandboxTransport:
    """An httpx transport for `skyl.Client(transport=...)` or any `httpx.Client`.

    Without `scenario`, each request's model field names the scenario. `.journal` keeps the newest
    `journal_size` exchanges and at most `journal_bytes` of their bodies (None: no bound). `faults`
    (`[sandbox.Fault("rate_limit", request=2)]` or `"rate_limit@2"`) play on every conversation.
    `echo="strict"` also refuses what the real provider accepts but a loop should not send (see
    `Engine`); by default the answer's `x-sandbox-tolerated` header says what was let pass.
    """
    engine = _engine(scenario, engine, budget, scenarios, faults, echo)
    return SandboxTransport(engine, journal_size, journal_bytes)


def _httpx2() -> ModuleType:
    try:
        import httpx2
    except ImportError:  # pragma: no cover - httpx2 is a dev dependency
        from .._exceptions import UsageError

        raise UsageError(
            "httpx2 is not installed. The current official SDKs use it: pip install 'skyl-sandbox[httpx2]'."
        ) from None
    return httpx2


class Httpx2Transport(_Door):
    """The httpx2 twin, for the official SDKs: `openai.OpenAI(http_client=httpx2.Client(transport=...))`."""

    def __init__(
        self,
        engine: Engine,
        journal_size: int | None = DEFAULT_JOURNAL_SIZE,
        journal_bytes: int | None = DEFAULT_JOURNAL_BYTES,
    ) -> None:
        super().__init__(engine, journal_size, journal_bytes)
        self._httpx2 = _httpx2()
        self._stream = _stream_class(self._httpx2)

    def handle_request(self, request: Any) -> Any:
        exchange = self._exchange(request, request.read())
        return _to_response(self._httpx2, self._stream, exchange, request)

    async def handle_async_request(self, request: Any) -> Any:
        exchange = self._exchange(request, await request.aread())
        return _to_response(self._httpx2, self._stream, exchange, request)

    def close(self) -> None:
        """Nothing to release; httpx2 clients call this on exit."""

    async def aclose(self) -> None:
        """Nothing to release; httpx2 clients call this on exit."""

    def __enter__(self) -> Httpx2Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Httpx2Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def httpx2_transport(
    scenario: Scenario | str | None = None,
    *,
    budget: int = DEFAULT_BUDGET,
    scenarios: Mapping[str, Scenario] | None = None,
    engine: Engine | None = None,
    journal_size: int | None = DEFAULT_JOURNAL_SIZE,
    journal_bytes: int | None = DEFAULT_JOURNAL_BYTES,
    faults: Faults = None,
    echo: Echo = "faithful",
) -> Httpx2Transport:
    """The same sandbox as `transport()`, for `httpx2.Client(transport=...)`."""
    engine = _engine(scenario, engine, budget, scenarios, faults, echo)
    return Httpx2Transport(engine, journal_size, journal_bytes)
