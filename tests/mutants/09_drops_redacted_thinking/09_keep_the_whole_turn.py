"""Breaks "a reasoning model's turn goes back whole": the collector keeps thinking it can show and drops Anthropic's
redacted_thinking blocks, which carry no text.

Caught by test_complete_keeps_the_whole_turn[stream-multi_step_reasoning-anthropic]: the second turn comes back
with its thinking block and without its redacted one, which the sandbox's strict echo refuses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl

MAX_ROUNDS = 5


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    """Consume `stream` and return the whole turn it carried, as `client.complete()` would have."""
    order: list[tuple[str, int]] = []  # ("text" | "reasoning" | "call", index), as each part first appeared
    text: list[str] = []
    reasoning: dict[int, skyl.Reasoning] = {}
    calls: dict[int, tuple[str, str, list[str]]] = {}  # index -> (id, name, argument fragments)
    end: skyl.MessageEnd | None = None
    for event in stream:
        match event:
            case skyl.TextDelta():
                if not text:
                    order.append(("text", 0))
                text.append(event.text)
            case skyl.ReasoningEnd():
                if event.reasoning.redacted:
                    continue  # nothing to show
                order.append(("reasoning", event.index))
                reasoning[event.index] = event.reasoning
            case skyl.ToolCallStart():
                order.append(("call", event.index))
                calls[event.index] = (event.id, event.name, [])
            case skyl.ToolCallDelta():
                calls[event.index][2].append(event.arguments)
            case skyl.MessageEnd():
                end = event
    if end is None:
        raise skyl.ToolLoopError("the stream ended before its MessageEnd event: the turn is incomplete")
    parts: list[skyl.Part] = []
    for kind, index in order:
        if kind == "text":
            parts.append(skyl.Text("".join(text)))
        elif kind == "reasoning":
            parts.append(reasoning[index])
        else:
            call_id, name, fragments = calls[index]
            arguments = "".join(fragments)
            parts.append(skyl.ToolCall(call_id, name, json.loads(arguments) if arguments else {}))
    return skyl.Response(
        message=skyl.Message("assistant", parts),
        stop_reason=end.stop_reason,
        usage=end.usage,
        model=end.model,
        id=end.id,
    )


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    """The bounded loop; every turn goes back whole, reasoning and all."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = collect_stream(client.stream(req)) if stream else client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)  # the whole turn: its reasoning, its text and its calls
        for call in calls:
            history.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
