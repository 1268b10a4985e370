"""Breaks 'discard a streamed turn cut before its end': keeps what arrived as if the turn were whole.

Caught by test_discards_an_answer_cut_before_its_end[stream-*]: on Gemini by the final answer's cut (its
one-frame call turn breaks before any event arrives), on the others by request 2's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.05
"""Seconds before the first retry when the provider gives no hint; doubled on each retry."""


def _collect(events: list[skyl.StreamEvent]) -> skyl.Response:
    text = "".join(event.text for event in events if isinstance(event, skyl.TextDelta))
    calls = [event.call for event in events if isinstance(event, skyl.ToolCallEnd)]
    parts: list[skyl.Part] = [skyl.Text(text)] if text else []
    parts.extend(calls)
    stop = skyl.StopReason.TOOL_USE if calls else skyl.StopReason.END_TURN
    return skyl.Response(message=skyl.Message("assistant", parts), stop_reason=stop)


def _ask(client: skyl.Client, req: skyl.Request, stream: bool) -> skyl.Response:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        events: list[skyl.StreamEvent] = []
        try:
            if not stream:
                return client.complete(req)
            for event in client.stream(req):
                events.append(event)
            return skyl.collect_stream(iter(events))
        except skyl.ProviderError as err:
            if events:
                return _collect(events)  # the half that arrived
            if err.status not in RETRYABLE or attempt == MAX_ATTEMPTS:
                raise skyl.ToolLoopError(
                    f"gave up after {attempt} attempts: status {err.status}; check the provider's status page"
                ) from err
            time.sleep(err.retry_after if err.retry_after is not None else BACKOFF)
    raise AssertionError("unreachable")


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    """The bounded loop; only `_ask` retries, so each turn is appended and its tools run once."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = _ask(client, req, stream)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
