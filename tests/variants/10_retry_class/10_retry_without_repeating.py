"""Correct: a Retrier object with __call__, and the loop written with while."""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.05
"""Seconds before the first retry when the provider gives no hint; doubled on each retry."""


class Retrier:
    def __init__(self, attempts: int) -> None:
        self.attempts = attempts

    def __call__(self, send: Callable[[], skyl.Response]) -> skyl.Response:
        failures: list[skyl.ProviderError] = []
        while len(failures) < self.attempts:
            try:
                return send()
            except skyl.ProviderError as err:
                if err.status not in RETRYABLE:
                    raise
                failures.append(err)
                if len(failures) < self.attempts:
                    time.sleep(err.retry_after if err.retry_after is not None else BACKOFF)
        last = failures[-1]
        raise ConnectionError(
            f"provider unavailable: {len(failures)} attempts failed, the last with status {last.status}. "
            "Check the provider's status page."
        ) from last


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    retry = Retrier(MAX_ATTEMPTS)
    rounds = 0
    while rounds < MAX_ROUNDS:
        rounds += 1
        resp = retry(lambda: skyl.collect_stream(client.stream(req)) if stream else client.complete(req))
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            try:
                output, failed = run(call), False
            except Exception as exc:  # noqa: BLE001 - a failing tool is an error result (challenge 07)
                output, failed = f"ERROR: {exc}", True
            req.messages.append(skyl.tool_result_message(call.id, output, is_error=failed))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds: check what the tools return")
