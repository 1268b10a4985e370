"""Correct: the bound spelt as a word ("five"), and a custom exception class."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise RunawayToolLoop(history)


class RunawayToolLoop(Exception):
    """The model kept asking for tools; carries the call sequence for logs."""

    def __init__(self, history: list[str]) -> None:
        self.history = history
        super().__init__(
            f"Gave up after five rounds. The model called {' '.join(history)} in that order; "
            "examine the results those tools gave."
        )
