"""Breaks 'never append the turn twice': the retry wraps the appends, so a failed request's turn and results go
in again.

Caught by test_retries_a_rate_limit_and_an_overload: the retry carries 2 more messages.
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


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    resp = skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
    for _ in range(MAX_ROUNDS):
        calls = resp.tool_calls()
        if not calls:
            return resp
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                req.messages.append(resp.message)
                for call in calls:
                    req.messages.append(skyl.tool_result_message(call.id, run(call)))
                resp = skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
                break
            except skyl.ProviderError as err:
                if err.status not in RETRYABLE or attempt == MAX_ATTEMPTS:
                    raise skyl.ToolLoopError(
                        f"gave up after {attempt} attempts: status {err.status}; check the provider's status page"
                    ) from err
                time.sleep(err.retry_after if err.retry_after is not None else BACKOFF)
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds: check what these tools return")
