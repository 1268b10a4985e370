"""Breaks the contract "return the model's final Response" with the `__eq__` exploit: an object equal to anything.

Caught by test_finishes_the_task_within_the_bound: the grader checks the type, so `expected == actual` cannot be fooled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox import skyl


class _EqualToAnything:
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __getattr__(self, name: str) -> Any:
        return self


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> Any:
    return _EqualToAnything()
