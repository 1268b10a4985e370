"""skyl clients that remember the messages of every request they encode.

The journal keeps the bytes the provider received and, for a request it accepted, the conversation
it read. For a request it rejected there is no conversation to read, yet that is the one a learner
must see, so the client keeps each request's messages by body.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from .._collect import StreamCollector
from .._events import StreamEvent
from .._types import Message, Request, Response
from ..skyl import AsyncClient, Client, Stream

__all__ = ["RecordingAsyncClient", "RecordingClient", "Sent", "TeeStream"]

Sent = dict[bytes, tuple[Message, ...]]
"""Request body -> the messages the client encoded into it."""


class RecordingClient(Client):
    def __init__(self, provider: str, *, transport: httpx.BaseTransport, sent: Sent) -> None:
        super().__init__(provider, transport=transport)
        self._sent = sent

    def _prepare(self, request: Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        url, body, headers = super()._prepare(request, stream=stream)
        self._sent[body] = tuple(request.messages)
        return url, body, headers


class RecordingAsyncClient(AsyncClient):
    def __init__(self, provider: str, *, transport: httpx.AsyncBaseTransport, sent: Sent) -> None:
        super().__init__(provider, transport=transport)
        self._sent = sent

    def _prepare(self, request: Request, *, stream: bool) -> tuple[str, bytes, dict[str, str]]:
        url, body, headers = super()._prepare(request, stream=stream)
        self._sent[body] = tuple(request.messages)
        return url, body, headers


class TeeStream:
    """A stream handed to the learner's collector that also feeds skyl's own, for the reference turn.

    The reference collector is bound here at import, so a grading test may take `skyl.collect_stream`
    away from the learner without losing it.
    """

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._reference = StreamCollector()

    def __iter__(self) -> Iterator[StreamEvent]:
        for event in self._stream:
            self._reference.feed(event)
            yield event

    def __enter__(self) -> TeeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.__exit__(None, None, None)

    def reference(self) -> Response | None:
        """The turn the stream carried, or None if it was not read to the end."""
        try:
            return self._reference.response()
        except Exception:  # noqa: BLE001 - an unfinished stream has no reference turn
            return None
