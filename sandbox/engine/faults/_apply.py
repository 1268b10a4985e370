"""A picked fault made concrete for one wire format: the error to answer with, or the answer's frames
broken as the fault says and how an adapter must deliver them. Pure functions."""

from __future__ import annotations

from ...wire import ErrorResponse, Rule
from . import anthropic, gemini, openai
from ._delivery import Delivery
from ._plan import Applied
from ._spec import Fault
from ._statuses import allowed

__all__ = ["FaultError", "fault_error", "shape"]

_BODIES = {"openai": openai, "openai-responses": openai, "anthropic": anthropic, "gemini": gemini}


class FaultError(ErrorResponse):
    """A scripted fault's error response: a `ErrorResponse` whose rule is `Rule.FAULT`, so graders and
    journals never take it for the loop's mistake."""

    def __init__(self, applied: Applied, status: int, body: bytes, headers: dict[str, str], message: str) -> None:
        super().__init__(status, body, message=message, rule=Rule.FAULT, headers=headers)
        self.fault = applied.fault
        self.attempt = applied.attempt
        self.early = applied.early
        """The request came back before the previous retry hint had passed."""


def _status(fault: Fault, provider: str) -> int:
    kind = fault.kind if fault.is_error else "overloaded"
    statuses = allowed(provider, kind)
    return fault.status if fault.status in statuses else statuses[0]


def fault_error(applied: Applied, provider: str, model: str, digest: str) -> FaultError:
    """The provider's error response for an error fault (or for a stream fault on a plain request,
    which can only show as the provider's overloaded error)."""
    status = _status(applied.fault, provider)
    headers, body, message = _BODIES[provider].error(applied.fault, status, model, digest)
    return FaultError(applied, status, body, headers, message)


def shape(
    fault: Fault, provider: str, chunks: tuple[bytes, ...], *, stream: bool
) -> tuple[tuple[bytes, ...], Delivery]:
    """The answer's chunks as `fault` breaks them, and how to deliver them. A plain (JSON) answer is
    one chunk: `truncated` sends its first half, `cut` closes before it (or after half, `after` >= 1).
    A stream of `after` frames or fewer still loses its end (a cut breaks off inside its last frame):
    a broken answer never arrives whole."""
    if fault.kind == "latency":
        return chunks, Delivery(first_byte=fault.first_byte, between=fault.between)
    keep = fault.frames_before_break()
    if not stream:
        body = chunks[0] if chunks else b""
        halves = (body[: len(body) // 2], body[len(body) // 2 :])
        if fault.kind == "cut":  # the whole body announced, half of it sent
            return (halves, Delivery(cut_after=1)) if keep else (chunks, Delivery(cut_after=0))
        return halves[:1], Delivery()
    if fault.kind == "cut" and keep and len(chunks) <= keep:  # too short: break off inside the last frame
        last = chunks[-1] if chunks else b""
        chunks = (*chunks[:-1], last[: len(last) // 2], last[len(last) // 2 :])
        return chunks, Delivery(cut_after=len(chunks) - 1)
    keep = min(keep, max(len(chunks) - 1, 0))
    sent = list(chunks[:keep])
    if fault.kind == "stream_error":
        return (*sent, *_BODIES[provider].stream_error(provider, sent)), Delivery()
    if fault.kind == "truncated":
        return tuple(sent), Delivery()
    return chunks, Delivery(cut_after=keep)
