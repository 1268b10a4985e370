"""The answer at a replayed position: the step's turn rendered, then encoded as the provider's JSON or
stream, and shaped by the fault that plays on it.

May touch: nothing but what it is handed (the scenario, the position the replay reached, the fault
already picked); it keeps no state, so the same position always renders the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..messages._types import Message, Part, StopReason, Text, ToolCall, Usage
from ..wire import Conversation, ModelTurn, WireFormat
from ..wire._reasoning import reasoning_tokens
from ._exchange import Exchange, answered_exchange
from ._replay import Position
from ._scenario import Scenario, render_text
from ._sent import call_tokens, expected_calls, expected_reasoning, sent_calls
from ._structured import structured_parts
from ._tolerance import TOLERATED
from .faults import Applied, shape

__all__ = ["answer_at", "render_turn"]

_NO_CALLS: tuple[Sequence[ToolCall], int] = ((), 0)


def render_turn(
    wire: WireFormat,
    scenario: Scenario,
    position: Position,
    conversation: Conversation,
    body_size: int,
    request_digest: str = "",
    *,
    serial: bool = False,
) -> ModelTurn:
    """The turn at `position`. `serial`: one call of the step (the next one) rather than all of them."""
    step = position.playing or scenario.steps[position.script_index]
    # A final answer makes no calls, and most scenarios do not reason: neither is asked for then.
    calls, tokens = _NO_CALLS
    if step.calls and scenario.respond is None:
        calls, tokens = sent_calls.rendered(wire, scenario, position.script_index, position.step)
    elif step.calls:
        calls = expected_calls(wire, scenario, step, position.step)
        tokens = call_tokens(calls)
    if serial and len(calls) > 1:
        calls = calls[position.played : position.played + 1]
        tokens = call_tokens(calls)
    text = render_text(step.text, position.results, position.last) if step.text and not position.played else ""
    reasoning = expected_reasoning(wire, scenario, step, position.step, conversation) if scenario.reasoning else ()
    parts: list[Part] = [*reasoning, Text(text), *calls] if text else [*reasoning, *calls]
    if step.output is not None:
        parts = [*reasoning, *structured_parts(wire, scenario, step, position.step, conversation)]
        calls = [part for part in parts if isinstance(part, ToolCall)]
        tokens = call_tokens(calls)
        text = "".join(part.text for part in parts if isinstance(part, Text))
    stop = step.stop or (StopReason.TOOL_USE if calls else StopReason.END_TURN)
    # docs/agents/scenarios.md, "Usage figures": 4 characters a token, thinking included in the output.
    thinking = reasoning_tokens(step.thought()) if reasoning else 0
    output_tokens = 1 + len(text) // 4 + tokens + thinking
    return ModelTurn(
        message=Message("assistant", parts),
        stop_reason=stop,
        # a step played one call per turn: each turn's items their own ids
        seed=f"{scenario.name}/{position.step}" + (f"~{position.played}" if position.played else ""),
        raw_stop_reason=step.stop_reasons.get(wire.name),
        usage=Usage(input_tokens=max(1, body_size // 4), output_tokens=output_tokens),
        request=request_digest,
        reasoning_tokens=thinking,
    )


def answer_at(
    request: tuple[str, str, bytes],
    wire: WireFormat,
    scenario: Scenario,
    conversation: Conversation,
    position: Position,
    digest: str,
    applied: Applied | None,
    *,
    serial: bool,
) -> tuple[Exchange, Mapping[str, Any] | None]:
    """The exchange answering `request` (method, path, body) with the turn at `position`, and the
    answer's JSON object when it has one (a plain answer, a Responses stream: see
    `WireFormat.encode_stream_answer`). `applied` is the fault playing on this attempt, if any."""
    method, path, body = request
    turn = render_turn(wire, scenario, position, conversation, len(body), digest, serial=serial)
    response: Mapping[str, Any] | None = None
    if conversation.stream:
        frames, response = wire.encode_stream_answer(turn, conversation)
        chunks = tuple(frames)
        headers = {
            "content-type": wire.stream_media_type,
            **wire.request_headers(digest),
            **wire.answer_headers(digest, stream=True),
        }
    else:
        answer, response = wire.encode_answer(turn, conversation)
        chunks = (answer,)
        headers = {
            "content-type": wire.media_type,
            **wire.request_headers(digest),
            **wire.answer_headers(digest, stream=False),
        }
    if position.tolerated:
        headers[TOLERATED] = "; ".join(position.tolerated).encode("ascii", "backslashreplace").decode("ascii")
    delivery = None
    if applied is not None:
        chunks, delivery = shape(applied.fault, wire.name, chunks, stream=conversation.stream)
    exchange = answered_exchange(
        method,
        path,
        headers,
        chunks,
        body,
        wire.name,
        conversation,
        scenario.name,
        position.step,
        turn,
        applied.fault if applied is not None else None,
        delivery,
        tuple(position.tolerated),
    )
    return exchange, response
