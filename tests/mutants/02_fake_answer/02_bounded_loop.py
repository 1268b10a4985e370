"""Breaks the whole lesson with the grader exploit "hard-code the answer": it never calls the model.

Caught by test_finishes_the_task_within_the_bound: it returned without asking the model anything.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    return skyl.Response(skyl.assistant_text("The weather in Paris: 18C, clear."), skyl.StopReason.END_TURN)
