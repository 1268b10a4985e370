"""Correct, as a configured object: complete is a ToolLoop instance, and its bound is a field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox import skyl


class GaveUp(Exception):
    """The model still wanted tools when the loop's bound was hit."""


@dataclass(frozen=True)
class ToolLoop:
    max_rounds: int = 5

    def __call__(self, client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
        for _ in range(self.max_rounds):
            resp = client.complete(req)
            if not resp.tool_calls():
                return resp
            self._answer(req, resp, run)
        raise GaveUp(f"no answer after {self.max_rounds} rounds")

    @staticmethod
    def _answer(req: skyl.Request, resp: skyl.Response, run: Callable[[skyl.ToolCall], str]) -> None:
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))


complete = ToolLoop()
