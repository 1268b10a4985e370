"""What a grading test gets from the `challenge` fixture: the implementation under test, and
dialogues with the sandbox built for it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

import pytest

from ..._scenario import Scenario
from ...faults import Fault
from ..boundary._endpoint import Endpoint
from ..boundary._implementations import Implementations
from ..boundary._protocol import ImplementationError
from ..boundary._runner import Worker, WorkerError
from ._dialogue import TAKEN_AWAY, Dialogue
from ._owner import LearnerFunction
from ._probe import WAIT

__all__ = ["Challenge", "Deadlines", "take_away_collect_stream"]


class Deadlines:
    """The per-test time limit. After a hang, the rest of that challenge's tests get a short one:
    a correct solution answers in milliseconds, and one hang should not stall a whole run.

    The same holds for the wait of challenge 08's concurrency probe: once a challenge's calls were
    seen running one at a time, its later tests (and generated examples) wait only briefly."""

    def __init__(self, seconds: float, after_hang: float = 0.5, after_sequential: float = 0.05) -> None:
        self.seconds = seconds
        self.after_hang = min(seconds, after_hang)
        self.after_sequential = min(WAIT, after_sequential)
        self._hung: set[str] = set()
        self._sequential: set[str] = set()

    def for_challenge(self, name: str) -> float:
        return self.after_hang if name in self._hung else self.seconds

    def record_hang(self, name: str) -> None:
        self._hung.add(name)

    def concurrency_wait(self, name: str) -> float:
        return self.after_sequential if name in self._sequential else WAIT

    def record_sequential(self, name: str) -> None:
        self._sequential.add(name)


class Challenge:
    """One challenge, for one grading test."""

    def __init__(
        self, name: str, source: Path, shown_as: str, implementations: Implementations, deadlines: Deadlines
    ) -> None:
        self.name = name
        """The folder name, `02_bounded_loop`."""
        self.source = source
        """The implementation file under test: the learner's exercise.py, or `--impl DIR/<name>.py`."""
        self.shown_as = shown_as
        self._implementations = implementations
        self._deadlines = deadlines
        self._dialogues: list[Dialogue] = []

    @property
    def worker(self) -> Worker:
        """The process running the implementation, with its module imported."""
        __tracebackhide__ = True
        try:
            return self._implementations.get(self.source, self.shown_as, self._deadlines.seconds)
        except (ImplementationError, WorkerError) as error:
            problem = str(error)
        # Failing outside the except block: inside it, pytest would print the message twice, joined by
        # "During handling of the above exception".
        pytest.fail(problem, pytrace=False)

    @property
    def endpoint(self) -> Endpoint:
        return self._implementations.endpoint

    def discard_worker(self) -> None:
        self._implementations.discard(self.source)

    def function(self, name: str, *, asynchronous: bool = False) -> LearnerFunction:
        """The learner's function `name`, checked to exist (and to be `async def` when asked)."""
        __tracebackhide__ = True
        functions = self.worker.functions
        if name not in functions:
            pytest.fail(
                f"{self.shown_as} has no function {name}(). Keep the name and signature from the starter file.",
                pytrace=False,
            )
        if asynchronous and not functions[name]:
            pytest.fail(
                f"{name}() in {self.shown_as} must be defined with `async def`: it awaits the client and the "
                "tool calls.",
                pytrace=False,
            )
        return LearnerFunction(name, functions[name])

    def dialogue(
        self,
        scenario: str | Scenario,
        provider: str,
        *,
        mode: Literal["sync", "async"] = "sync",
        failing: Mapping[str, str] | None = None,
        unknown_tools: Collection[str] = (),
        refuse: int | None = None,
        faults: Sequence[Fault] = (),
    ) -> Dialogue:
        """A fresh conversation with `scenario` (a catalogue name, or a generated `Scenario`) on
        `provider`'s wire format; see `Dialogue`. `faults` script the provider failing (challenge 10)."""
        dialogue = Dialogue(
            self,
            scenario,
            provider,
            mode=mode,
            failing=failing,
            unknown_tools=unknown_tools,
            refuse=refuse,
            faults=faults,
        )
        self._dialogues.append(dialogue)
        return dialogue

    def deadline(self) -> float:
        return self._deadlines.for_challenge(self.name)

    def full_deadline(self) -> float:
        """The deadline before any hang shortened it."""
        return self._deadlines.seconds

    def concurrency_wait(self) -> float:
        return self._deadlines.concurrency_wait(self.name)

    def record_sequential(self) -> None:
        self._deadlines.record_sequential(self.name)

    def record_hang(self) -> None:
        self._deadlines.record_hang(self.name)

    def not_started(self, function: str) -> str:
        return f"{self.name}: not started ({function}() in {self.shown_as} still raises NotImplementedError)"

    def close(self) -> None:
        for dialogue in self._dialogues:
            dialogue.close()


def take_away_collect_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make skyl's own stream assembly fail with a message, for challenge 05, whose point is to write it.

    It is taken away in the worker running the learner's code, for this test's calls; the grader's
    reference turn is decoded from what the sandbox sent, here.
    """
    monkeypatch.setitem(TAKEN_AWAY, "collect_stream", True)
