"""Recorded traffic made into scenarios: what `sandbox record` and `sandbox import` write.

A `Recording` is one HTTP exchange with a provider, as a proxy saw it or a cassette kept it. Each
model request is read as the sandbox reads it (its wire format's `parse_request`) and its answer as
the skyl client reads one (`decode_response`, or the stream's events collected), so any of the four
wire formats, streamed or not, comes out the same:

- the tools of the conversation's first request, the user's first message as its `prompt`;
- one step per model turn, in order: its text and its calls (name and arguments);
- a fault for each error answer a turn got before its success (429 `rate_limit`, the provider's
  overloaded and server statuses, an error event or a truncated stream);
- `tool_outputs`: what the loop sent back for each call, so `sandbox replay` runs the scenario.

A request whose history holds no model turn starts a new conversation (unless the last one has
not had an answer yet: that is a retry); each conversation becomes its own scenario. Nothing here
touches a file: `scenarios_from` (or `Transcription`, one exchange at a time) returns TOML text
(`sandbox.engine._toml_out`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProviderError
from ..messages._types import Message, Response, StopReason, Tool, ToolCall
from ..skyl._collect import StreamCollector
from ..wire import ErrorResponse, route
from ..wire._base import Conversation
from ..wire._sse import SSEEvent, SSEParser
from ._toml_out import render
from .faults import _statuses

__all__ = ["Recording", "Transcription", "scenarios_from"]


@dataclass(frozen=True)
class Recording:
    """One exchange with a provider, secrets already left out."""

    method: str
    path: str
    status: int
    request_body: bytes
    response_body: bytes
    query: str = ""
    content_type: str = ""
    """The answer's content type: an event stream is read as one."""


@dataclass
class _Turn:
    number: int
    """The model request it answers: assistant turns in the history + 1."""
    response: Response | None = None
    faults: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Conversation:
    provider: str
    first: Conversation
    turns: dict[int, _Turn] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)
    """Every tool the conversation's requests declared, first declaration first."""
    outputs: dict[str, str] = field(default_factory=dict)
    requests: int = 0

    def turn(self, number: int) -> _Turn:
        return self.turns.setdefault(number, _Turn(number))

    @property
    def answered(self) -> bool:
        return any(turn.response is not None for turn in self.turns.values())


def scenarios_from(recordings: Sequence[Recording], *, name: str, source: str) -> list[tuple[str, str]]:
    """(scenario name, TOML text) for each conversation in `recordings`: `name`, then `name_2`, ...
    `source` says where the traffic came from, in each file's first comment. Exchanges that are not
    model requests of the four wire formats are left out."""
    transcription = Transcription(name=name, source=source)
    for recording in recordings:
        transcription.add(recording)
    return transcription.scenarios()


class Transcription:
    """`scenarios_from`, one recording at a time: each is read once, as it arrives (`sandbox record`
    writes the scenarios again after every exchange)."""

    def __init__(self, *, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.conversations: list[_Conversation] = []

    def add(self, recording: Recording) -> int | None:
        """Read one exchange; the index of the conversation it joined (None: not a model request)."""
        found = route(recording.path)
        if found is None or recording.method != "POST":
            return None
        try:
            conversation = found.wire.parse_request(
                recording.request_body, path_model=found.model, path_stream=found.stream
            )
        except ErrorResponse:
            return None  # a request the provider refuses: no turn of the model's to learn from
        conversations = self.conversations
        number = 1 + sum(message.role == "assistant" for message in conversation.messages)
        if not conversations or (number == 1 and conversations[-1].answered):
            conversations.append(_Conversation(found.provider, conversation))  # or the recording began mid-way
        current = conversations[-1]
        current.requests += 1
        for tool in conversation.tools:
            current.tools.setdefault(tool.name, tool)
        current.outputs.update(_outputs(conversation.messages))
        _answer(current.turn(number), found.provider, recording, stream=conversation.stream or found.stream)
        return len(conversations) - 1

    def scenario(self, index: int) -> tuple[str, str]:
        """Conversation `index`'s scenario: its name and its TOML text."""
        name = self.name if index == 0 else f"{self.name}_{index + 1}"
        return name, render(_layout(self.conversations[index], name, self.source))

    def scenarios(self) -> list[tuple[str, str]]:
        return [self.scenario(index) for index in range(len(self.conversations))]


def _answer(turn: _Turn, provider: str, recording: Recording, *, stream: bool) -> None:
    wire = route(recording.path).wire  # type: ignore[union-attr]  # routed by the caller
    if recording.status >= 400:
        fault = _fault_for(provider, recording.status)
        if fault is not None:
            _add_fault(turn, fault)
        return
    try:
        if stream or recording.content_type.startswith("text/event-stream"):
            turn.response = _collect(wire, recording.response_body)
        else:
            turn.response = wire.decode_response(json.loads(recording.response_body))
    except _BrokenStream as broken:
        _add_fault(turn, {"kind": broken.kind})
    except (ProviderError, ValueError):
        pass  # an answer the client could not read either: nothing to script


class _BrokenStream(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _collect(wire: Any, body: bytes) -> Response:
    """A streamed answer's turn, as the skyl client assembles it; `_BrokenStream` names the fault
    a stream that errs (`stream_error`) or stops short (`truncated`) plays."""
    decoder = wire.stream_decoder()
    collector = StreamCollector()
    events: list[SSEEvent]
    if body.lstrip()[:1] == b"[":  # Gemini without alt=sse: one JSON array of responses
        events = [SSEEvent(None, json.dumps(item)) for item in json.loads(body)]
        leftover = ""
    else:
        parser = SSEParser()
        events = parser.feed(body)
        closing, leftover = parser.close()
        events.extend(closing)
    try:
        for event in events:
            for decoded in decoder.feed(event):
                collector.feed(decoded)
    except ProviderError:
        raise _BrokenStream("stream_error") from None
    try:
        if leftover.strip():
            raise ProviderError("the stream ended mid-event", status=200, provider=wire.name)
        for decoded in decoder.finish():
            collector.feed(decoded)
        return collector.response()
    except ProviderError:
        raise _BrokenStream("truncated") from None


def _fault_for(provider: str, status: int) -> dict[str, Any] | None:
    """The fault an error status plays, with the status where it is not the kind's usual one; None
    for a refusal of the loop's own request (a 400 is the loop's mistake, not the provider's)."""
    for kind in ("rate_limit", "overloaded", "server_error"):
        allowed = _statuses.allowed(provider, kind)
        if status in allowed:
            return {"kind": kind} if status == allowed[0] else {"kind": kind, "status": status}
    return None


def _add_fault(turn: _Turn, fault: dict[str, Any]) -> None:
    """Faults on one request in a row: the same one again counts as one more `times`."""
    entry = {**fault, "request": turn.number}
    if turn.faults and {k: v for k, v in turn.faults[-1].items() if k != "times"} == entry:
        turn.faults[-1]["times"] = turn.faults[-1].get("times", 1) + 1
    else:
        turn.faults.append(entry)


def _outputs(messages: Sequence[Message]) -> dict[str, str]:
    """What each call of the history got back, keyed as `tool_outputs` is: `name(arg='value')`."""
    calls: dict[str, ToolCall] = {}
    pending: list[ToolCall] = []
    out: dict[str, str] = {}
    for message in messages:
        if message.role == "assistant":
            pending = message.tool_calls()
            calls.update((call.id, call) for call in pending)
            continue
        for result in message.tool_results():
            call = calls.get(result.call_id) or (pending.pop(0) if pending else None)
            if call is not None:
                out[_call_key(call)] = result.content
    return out


def _call_key(call: ToolCall) -> str:
    args = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    return f"{call.name}({args})"


def _layout(conversation: _Conversation, name: str, source: str) -> dict[str, Any]:
    first = conversation.first
    prompt = next((message.text() for message in first.messages if message.role == "user"), "")
    numbers = sorted(conversation.turns)
    steps: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    reasoning = False
    for number in numbers:
        turn = conversation.turns[number]
        faults.extend(turn.faults)
        if turn.response is None:
            continue
        step, thought = _step(turn.response)
        reasoning = reasoning or thought
        steps.append(step)
    comments = [
        f"Recorded from {source}: {conversation.requests} {conversation.provider} request(s), model {first.model!r}.",
        "Edit freely: each [[steps]] entry is one model turn, in order; tool_outputs are what the tools returned.",
    ]
    if not steps or steps[-1].get("calls"):
        comments.append("The recording ended before the model's final answer: the last step was added.")
        steps.append({"text": "(the recording ended here)"})
    tools = [
        {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
        for tool in conversation.tools.values()
    ]
    undeclared = sorted({call["name"] for step in steps for call in step.get("calls", ())} - set(conversation.tools))
    if undeclared:
        comments.append(f"The model called tools no request declared ({', '.join(undeclared)}): declared here.")
        tools += [{"name": tool, "parameters": {"type": "object"}} for tool in undeclared]
    return {
        "#": comments,
        "name": name,
        "description": f"Recorded {conversation.provider} conversation ({first.model}).",
        "prompt": prompt,
        "reasoning": reasoning,
        "tools": tools,
        "steps": steps,
        "faults": faults,
        "tool_outputs": {key: value for key, value in conversation.outputs.items()},
    }


def _step(response: Response) -> tuple[dict[str, Any], bool]:
    """A step's table for a recorded turn, and whether the turn carried reasoning."""
    message = response.message
    calls = message.tool_calls()
    step: dict[str, Any] = {}
    text = message.text()
    if text:
        step["text"] = text.replace("{", "{{").replace("}", "}}")  # literal: a step's text may quote results
    if calls:
        step["calls"] = [{"name": call.name, "arguments": dict(call.arguments)} for call in calls]
    usual = StopReason.TOOL_USE if calls else StopReason.END_TURN
    if response.stop_reason != usual:
        step["stop"] = response.stop_reason.value
    parts = message.reasoning()
    summary = " ".join(part.summary for part in parts if part.summary)
    if summary:
        step["reasoning"] = summary
    if not step:
        step["text"] = ""
    return step, bool(parts)
