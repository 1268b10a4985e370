"""skyl clients that remember the messages of every request they encode, and the reference turn of a stream.

The journal keeps the bytes the provider received and, for a request it accepted, the conversation
it read. For a request it rejected there is no conversation to read, yet that is the one a learner
must see, so the client keeps each request's messages by body. (The learner's client, in its
worker, tells the grader what it encoded; the grader re-encodes it here and keeps it only if the
bytes match what the sandbox received.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import httpx

from ...messages._types import Message, Request, Response
from ...skyl import AsyncClient, Client
from ...skyl._collect import StreamCollector
from ...wire import get_wire_format
from ...wire._sse import SSEParser
from ..boundary._marshal import body_digest, read_value

__all__ = ["Known", "RecordingAsyncClient", "RecordingClient", "Sent", "StreamHandle", "reference_turn"]


class Known:
    """The messages one worker reply described, once each (`known`), rebuilt only when first asked for:
    the reply's `sent` notes and its final `messages` name them by index."""

    def __init__(self, data: Any) -> None:
        self._data: list[Any] = data if isinstance(data, list) else []
        self._rebuilt: dict[int, Any] = {}

    def messages(self, indices: Any) -> tuple[Any, ...] | None:
        """The messages at `indices`, or None if that is not a list of indices into this reply's table."""
        if not isinstance(indices, list) or not all(
            type(index) is int and 0 <= index < len(self._data) for index in indices
        ):
            return None
        return tuple(self._one(index) for index in indices)

    def _one(self, index: int) -> Any:
        if index not in self._rebuilt:
            self._rebuilt[index] = read_value(self._data[index])
        return self._rebuilt[index]


class Sent(dict[bytes, tuple[Message, ...]]):
    """Request body -> the messages the client encoded into it.

    The learner's client, in its worker, notes each request it encodes: the digest of the body and the
    messages, by index into its reply's table (`Known`). Notes are read (rebuilt into messages) only when
    a verdict asks for that body.
    """

    def __init__(self) -> None:
        super().__init__()
        self._notes: dict[str, tuple[Known, Any]] = {}

    def note(self, digest: str, messages: Any, known: Known) -> None:
        self._notes[digest] = (known, messages)

    def get(self, body: bytes, default: Any = None) -> Any:
        if body in self:
            return self[body]
        note = self._notes.pop(body_digest(body), None)
        messages = note[0].messages(note[1]) if note is not None else None
        if messages is None:
            return default
        self[body] = messages
        return messages


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


class StreamHandle:
    """What `Dialogue.stream_for()` hands a grading test: the worker opens the stream itself (from the
    dialogue's request), and the grader reads the turn it carried from the bytes the sandbox sent."""

    def __init__(self, dialogue: _HasReference) -> None:
        self._dialogue = dialogue

    def reference(self) -> Response | None:
        """The turn the stream carried, or None if the learner's code did not read it to the end."""
        return self._dialogue.stream_reference()


class _HasReference(Protocol):
    def stream_reference(self) -> Response | None: ...


def reference_turn(provider: str, chunks: Iterable[bytes]) -> Response | None:
    """The turn a stream's bytes carry, decoded by skyl's own parser and collector (bound here at import,
    so taking them away from a learner never takes them from the grader)."""
    wire = get_wire_format(provider)
    decoder = wire.stream_decoder()
    parser = SSEParser()
    collector = StreamCollector()
    try:
        for chunk in chunks:
            for sse in parser.feed(chunk):
                for event in decoder.feed(sse):
                    collector.feed(event)
        events, _ = parser.close()
        for sse in events:
            for event in decoder.feed(sse):
                collector.feed(event)
        for event in decoder.finish():
            collector.feed(event)
        return collector.response()
    except Exception:  # noqa: BLE001 - a stream the sandbox cut short has no reference turn
        return None
