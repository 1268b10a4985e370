"""The skyl client: one `complete`/`stream` surface over four providers' real wire formats.

It is a thin layer over httpx: the wire-format module does the encoding and decoding, the client
sends bytes and turns transport failures into errors that say what to check.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any

import httpx

from .._exceptions import ProviderError, UsageError
from ..messages._events import StreamEvent
from ..messages._types import Request, Response
from ..wire import EncodedRequest, WireFormat, get_wire_format
from ..wire._retry_hints import read_hint
from ..wire._sse import SSEParser

__all__ = ["AsyncClient", "AsyncStream", "Client", "Stream"]


class _Base:
    def __init__(
        self,
        provider: str,
        api_key: str | None,
        base_url: str | None,
    ) -> None:
        if not isinstance(provider, str):
            raise UsageError(f"provider must be a string such as 'openai', got {provider!r}.")
        self.provider = provider
        self._wire: WireFormat = get_wire_format(provider)
        self.api_key = api_key if api_key is not None else "sandbox"
        self.base_url = (base_url or self._wire.base_url).rstrip("/")

    def _prepare(self, request: Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        if not isinstance(request, Request):
            raise UsageError(
                f"complete() and stream() take a skyl.Request, got {type(request).__name__}. "
                "Build one with skyl.Request(model=..., messages=[...])."
            )
        request.check()  # the loop appends between requests: check what it appended
        encoded: EncodedRequest = self._wire.encode_request(request, stream=stream, api_key=self.api_key)
        body = json.dumps(encoded.json, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {"content-type": "application/json", **encoded.headers}
        return self.base_url + encoded.path, body, headers

    def _decode(self, response: httpx.Response) -> Response:
        content = response.content
        if response.status_code >= 400:
            error = self._wire.decode_error(response.status_code, content)
            error.retry_after = read_hint(response.headers, error.body)
            raise error
        try:
            data = json.loads(content)
        except ValueError:
            raise ProviderError(
                f"{self.provider} sent a {response.status_code} response whose body is not JSON: {content[:200]!r}",
                status=response.status_code,
                provider=self.provider,
                body=content.decode("utf-8", errors="replace"),
            ) from None
        return self._wire.decode_response(data)

    def _unreachable(self, url: str, exc: httpx.HTTPError) -> ProviderError:
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            return self._broken(url, exc)
        hint = " Is `sandbox serve` running there?" if "127.0.0.1" in url or "localhost" in url else ""
        return ProviderError(
            f"Could not reach {url}: {exc!s}.{hint}",
            status=0,
            provider=self.provider,
            error_type="connection_error",
        )

    def _broken(self, url: str, exc: httpx.HTTPError) -> ProviderError:
        """The connection closed before the answer was whole: nothing of it may be used."""
        return ProviderError(
            f"The connection to {url} closed before the answer was complete ({exc!s}). Discard what arrived "
            "and send the same request again.",
            status=0,
            provider=self.provider,
            error_type="connection_error",
        )


class Client(_Base):
    """A synchronous skyl client.

    `transport` mounts the sandbox (`sandbox.transport()`); `http_client` hands over a configured
    `httpx.Client` instead. With neither, requests go to the real provider at `base_url`.
    """

    def __init__(
        self,
        provider: str = "openai",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(provider, api_key, base_url)
        if http_client is not None and transport is not None:
            raise UsageError("Pass transport= or http_client=, not both: the client's transport wins.")
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(transport=transport, timeout=timeout)

    def complete(self, request: Request) -> Response:
        """Send one request and return the model's turn."""
        url, body, headers = self._prepare(request, stream=False)
        try:
            response = self._http.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise self._unreachable(url, exc) from None
        return self._decode(response)

    def stream(self, request: Request) -> Stream:
        """Send one request and iterate the turn's events as they arrive."""
        url, body, headers = self._prepare(request, stream=True)
        return Stream(self, url, body, headers)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Stream:
    """The events of one streamed turn. Iterate it once; use it as a context manager to close early."""

    def __init__(self, client: Client, url: str, body: bytes, headers: dict[str, str]) -> None:
        self._client = client
        self._request = client._http.build_request("POST", url, content=body, headers=headers)
        self._response: httpx.Response | None = None
        self._started = False

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._started:
            raise UsageError("A stream can be iterated only once; collect its events if you need them twice.")
        self._started = True
        client = self._client
        try:
            self._response = client._http.send(self._request, stream=True)
        except httpx.HTTPError as exc:
            raise client._unreachable(str(self._request.url), exc) from None
        try:
            if self._response.status_code >= 400:
                self._response.read()
                client._decode(self._response)
            decoder = client._wire.stream_decoder()
            parser = SSEParser()
            try:
                for chunk in self._response.iter_bytes():
                    for sse in parser.feed(chunk):
                        yield from decoder.feed(sse)
            except httpx.HTTPError as exc:
                raise client._broken(str(self._request.url), exc) from None
            yield from _finish(client, parser, decoder)
        finally:
            self._response.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._response is not None:
            self._response.close()


def _finish(client: _Base, parser: SSEParser, decoder: Any) -> list[StreamEvent]:
    events, leftover = parser.close()
    decoded: list[StreamEvent] = []
    for sse in events:
        decoded.extend(decoder.feed(sse))
    if leftover.strip():
        raise ProviderError(
            f"{client.provider} stream ended in the middle of an event: {leftover[:200]!r}",
            status=200,
            provider=client.provider,
        )
    decoded.extend(decoder.finish())
    return decoded


class AsyncClient(_Base):
    """The asyncio twin of `Client`: `await client.complete(req)`, `async for event in client.stream(req)`."""

    def __init__(
        self,
        provider: str = "openai",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(provider, api_key, base_url)
        if http_client is not None and transport is not None:
            raise UsageError("Pass transport= or http_client=, not both: the client's transport wins.")
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(transport=transport, timeout=timeout)

    async def complete(self, request: Request) -> Response:
        url, body, headers = self._prepare(request, stream=False)
        try:
            response = await self._http.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise self._unreachable(url, exc) from None
        return self._decode(response)

    def stream(self, request: Request) -> AsyncStream:
        url, body, headers = self._prepare(request, stream=True)
        return AsyncStream(self, url, body, headers)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncStream:
    """The events of one streamed turn, for `async for`."""

    def __init__(self, client: AsyncClient, url: str, body: bytes, headers: dict[str, str]) -> None:
        self._client = client
        self._request = client._http.build_request("POST", url, content=body, headers=headers)
        self._response: httpx.Response | None = None
        self._started = False

    async def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._started:
            raise UsageError("A stream can be iterated only once; collect its events if you need them twice.")
        self._started = True
        client = self._client
        try:
            self._response = await client._http.send(self._request, stream=True)
        except httpx.HTTPError as exc:
            raise client._unreachable(str(self._request.url), exc) from None
        try:
            if self._response.status_code >= 400:
                await self._response.aread()
                client._decode(self._response)
            decoder = client._wire.stream_decoder()
            parser = SSEParser()
            try:
                async for chunk in self._response.aiter_bytes():
                    for sse in parser.feed(chunk):
                        for event in decoder.feed(sse):
                            yield event
            except httpx.HTTPError as exc:
                raise client._broken(str(self._request.url), exc) from None
            for event in _finish(client, parser, decoder):
                yield event
        finally:
            await self._response.aclose()

    async def __aenter__(self) -> AsyncStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            await self._response.aclose()
