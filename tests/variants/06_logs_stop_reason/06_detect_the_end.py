"""Correct: reads stop_reason for a log line, but decides the end from the call list alone."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sandbox import skyl

log = logging.getLogger(__name__)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for round_number in range(1, 6):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if resp.stop_reason is not skyl.StopReason.TOOL_USE and calls:
            log.info("round %d: stop_reason=%s but %d calls", round_number, resp.stop_reason, len(calls))
        if len(calls) == 0:
            return resp
        req.messages.append(resp.message)
        req.messages.extend([skyl.tool_result_message(call.id, run(call)) for call in calls])
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
