"""What an adapter sends back: the `Exchange` type, and the error exchanges every refusal becomes.

May touch: nothing but the answer it is handed (a wire format's error envelope, the chunks already
rendered); it reads no scenario and keeps no state. Apart from the engine's dispatch so that the
adapters, the journal and the graders, which only read exchanges, depend on this small module alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..wire import Conversation, ErrorResponse, ModelTurn, WireFormat
from .faults import Delivery, Fault, FaultError

__all__ = ["Exchange", "answer_identity", "answered_exchange", "as_json_array", "error_exchange", "request_digest"]


@dataclass(frozen=True)
class Exchange:
    """One request and the sandbox's answer: what an adapter sends back, and what a journal keeps."""

    method: str
    path: str
    status: int
    headers: Mapping[str, str]
    chunks: tuple[bytes, ...]
    """The body: one chunk for JSON, one per SSE frame for a stream."""
    request_body: bytes = field(repr=False)
    provider: str | None = None
    conversation: Conversation | None = field(default=None, repr=False)
    scenario: str | None = None
    step: int | None = None
    turn: ModelTurn | None = field(default=None, repr=False)
    error: ErrorResponse | None = None
    fault: Fault | None = None
    """The scripted fault that answered (or broke, or slowed) this exchange, if one did."""
    delivery: Delivery | None = field(default=None, repr=False)
    """How an adapter must send the chunks (latency, a cut connection); None: all at once."""
    tolerated: tuple[str, ...] = ()
    """What the answer let pass that the strict echo mode refuses (also sent as `x-sandbox-tolerated`)."""

    @property
    def delivers_turn(self) -> bool:
        """The turn reached the client whole: no fault, or only latency."""
        return self.turn is not None and (self.fault is None or self.fault.kind == "latency")

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def is_stream(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")


def request_digest(method: str, path: str, body: bytes) -> str:
    """A hex digest unique to the request's method, path and bytes: what tells a retry of a request (the
    same bytes again) from another request, as faults count attempts. The digest of
    `METHOD\0path\0body`, the body never copied."""
    digest = hashlib.blake2b(f"{method.upper()}\0{path}\0".encode("utf-8", "surrogatepass"), digest_size=16)
    digest.update(body)
    return digest.hexdigest()


def answer_identity(number: int, body: bytes) -> str:
    """What every id an answer issues for itself derives from: the engine's `number` for the request
    (unique in the engine, so no two answers share an id), in hex after a CRC-32 of the request's
    bytes (eight hex digits), so that engines answering different requests, a server before and after
    a restart among them, seldom issue the same id. A checksum rather than a digest: the number
    already makes it unique."""
    return "%08x%x" % (zlib.crc32(body), number)  # noqa: UP031 - one call formats both fields


_new = object.__new__
_set = object.__setattr__


def answered_exchange(
    method: str,
    path: str,
    headers: Mapping[str, str],
    chunks: tuple[bytes, ...],
    request_body: bytes,
    provider: str,
    conversation: Conversation,
    scenario: str,
    step: int,
    turn: ModelTurn,
    fault: Fault | None,
    delivery: Delivery | None,
    tolerated: tuple[str, ...] = (),
) -> Exchange:
    """The exchange of a 200 the engine answered: `Exchange(...)` with these fields and no error, made
    without the frozen `__init__`, since every answer makes one: its fields are one dict that the
    instance takes as its own. `tests/engine/test_answer_ids.py` holds it to `Exchange`'s fields."""
    made = _new(Exchange)
    _set(
        made,
        "__dict__",
        {
            "method": method,
            "path": path,
            "status": 200,
            "headers": headers,
            "chunks": chunks,
            "request_body": request_body,
            "provider": provider,
            "conversation": conversation,
            "scenario": scenario,
            "step": step,
            "turn": turn,
            "error": None,
            "fault": fault,
            "delivery": delivery,
            "tolerated": tolerated,
        },
    )
    return made


def error_exchange(
    method: str,
    path: str,
    body: bytes,
    wire: WireFormat,
    error: ErrorResponse,
    conversation: Conversation | None,
    digest: str,
) -> Exchange:
    """The exchange for a refused request: the provider's error envelope, its headers and request id."""
    headers = {"content-type": "application/json", **error.headers, **wire.request_headers(digest)}
    return Exchange(
        method=method,
        path=path,
        status=error.status,
        headers=headers,
        chunks=(wire.identified_error_body(error, digest),),
        request_body=body,
        provider=wire.name,
        conversation=conversation,
        error=error,
        fault=error.fault if isinstance(error, FaultError) else None,
    )


def as_json_array(exchange: Exchange) -> Exchange:
    """A Gemini stream without alt=sse: the same chunks as one JSON array, `[{...}\r\n,{...}]`."""
    if exchange.status != 200 or not exchange.is_stream:
        return exchange
    frames = [chunk.decode("utf-8").strip().removeprefix("data: ").encode("utf-8") for chunk in exchange.chunks]
    chunks = tuple(
        (b"[" if index == 0 else b"\r\n,") + frame + (b"]" if index == len(frames) - 1 else b"")
        for index, frame in enumerate(frames)
    )
    return dataclasses.replace(exchange, headers={"content-type": "application/json"}, chunks=chunks)
