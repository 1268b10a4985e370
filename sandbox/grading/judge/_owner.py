"""What a dialogue needs from the challenge that opened it, as a protocol: the dialogue never imports
the `Challenge` class, so the two modules do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..boundary._endpoint import Endpoint
from ..boundary._runner import WorkerProcess

__all__ = ["LearnerFunction", "Owner"]


@dataclass(frozen=True)
class LearnerFunction:
    """A function of the learner's module, by name: it runs in the worker, never here."""

    name: str
    asynchronous: bool

    @property
    def __name__(self) -> str:
        return self.name


class Owner(Protocol):
    """The challenge a dialogue belongs to (`Challenge`): its worker, its door, its deadlines."""

    name: str
    source: Path
    shown_as: str

    @property
    def worker(self) -> WorkerProcess: ...

    @property
    def endpoint(self) -> Endpoint: ...

    def discard_worker(self) -> None: ...

    def deadline(self) -> float: ...

    def full_deadline(self) -> float: ...

    def concurrency_wait(self) -> float: ...

    def record_sequential(self) -> None: ...

    def record_hang(self, what: str = ...) -> None: ...

    def not_started(self, function: str) -> str: ...
