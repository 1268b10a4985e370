"""Breaks 'no tool run twice': streamed, each call runs as soon as its arguments are complete, before the
turn has arrived whole; when the stream breaks after that, the retry runs the call again.

Caught by test_never_runs_a_tool_twice_when_a_stream_breaks_after_its_call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.01


def _result(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    try:
        return skyl.tool_result_message(call.id, run(call))
    except Exception as exc:  # noqa: BLE001 - any failure of the tool goes back to the model
        return skyl.tool_result_message(call.id, f"ERROR: {type(exc).__name__}: {exc}", is_error=True)


def _once(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool
) -> tuple[skyl.Response, dict[str, skyl.Message]]:
    """One attempt; streamed, each call is run the moment its stream says it is complete."""
    if not stream:
        resp = client.complete(req)
        return resp, {call.id: _result(call, run) for call in resp.tool_calls()}
    collector = skyl.StreamCollector()
    started: dict[int, skyl.ToolCallStart] = {}
    fragments: dict[int, list[str]] = {}
    results: dict[str, skyl.Message] = {}
    for event in client.stream(req):
        collector.feed(event)
        if isinstance(event, skyl.ToolCallStart):
            started[event.index], fragments[event.index] = event, []
        elif isinstance(event, skyl.ToolCallDelta):
            fragments[event.index].append(event.arguments)
        elif isinstance(event, skyl.ToolCallEnd):
            start = started[event.index]
            arguments = json.loads("".join(fragments[event.index]) or "{}")
            call = skyl.ToolCall(start.id, start.name, arguments)
            results[call.id] = _result(call, run)  # the mistake: the turn is not whole yet
    return collector.response(), results


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                resp, results = _once(client, req, run, stream)
                break
            except skyl.ProviderError as err:
                if err.status not in RETRYABLE:
                    raise
                if attempt == MAX_ATTEMPTS:
                    raise skyl.ToolLoopError(
                        f"gave up after {attempt} attempts: the provider kept answering status {err.status}. "
                        "Check the provider's status page and your rate limits."
                    ) from err
                time.sleep(min(err.retry_after if err.retry_after is not None else BACKOFF, 30.0))
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(results[call.id])
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
