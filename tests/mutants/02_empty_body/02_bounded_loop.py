"""Breaks the task itself (the "comment everything out" exploit): the body is gone and it returns None.

Caught by test_finishes_the_task_within_the_bound: it returned None instead of the model's final Response.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response | None:
    return None
