"""What a grading test gets from the `challenge` fixture: the implementation under test, and
dialogues with the sandbox built for it."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

import pytest

from ...engine._scenario import Scenario
from ...engine.faults import Fault
from ..boundary._endpoint import Endpoint
from ..boundary._implementations import Implementations
from ..boundary._protocol import ImplementationError
from ..boundary._runner import WorkerError, WorkerProcess
from ._dialogue import TAKEN_AWAY, Dialogue
from ._owner import LearnerFunction
from ._probe import WAIT

__all__ = ["Challenge", "Deadlines", "take_away_collect_stream"]


class Deadlines:
    """The per-test time limit, and the run's. A submission cannot make grading take much longer than
    the reference (which answers in milliseconds): once a challenge's code has hung, its later tests
    fail at once without running it, and the test that hung gets a short deadline for what it still
    runs (a generated example's replay). Past the run's deadline, every test left fails at once.

    The same holds for the wait of challenge 08's concurrency probe: once a challenge's calls were
    seen running one at a time, its later tests (and generated examples) wait only briefly."""

    def __init__(
        self,
        seconds: float,
        after_hang: float = 0.5,
        after_sequential: float = 0.05,
        *,
        run_seconds: float | None = None,
    ) -> None:
        self.seconds = seconds
        self.after_hang = min(seconds, after_hang)
        self.after_sequential = min(WAIT, after_sequential)
        self.run_seconds = run_seconds
        self._ends = None if run_seconds is None else time.monotonic() + run_seconds
        self._hung: dict[str, tuple[str, str]] = {}
        self._sequential: set[str] = set()

    def for_challenge(self, name: str) -> float:
        seconds = self.after_hang if name in self._hung else self.seconds
        if self._ends is not None:
            seconds = max(0.05, min(seconds, self._ends - time.monotonic()))
        return seconds

    def record_hang(self, name: str, test: str = "", what: str = "") -> None:
        self._hung.setdefault(name, (test, what))

    def stopped(self, name: str, test: str) -> str | None:
        """Why `test` of challenge `name` does not run the learner's code at all, if it does not."""
        if name in self._hung and self._hung[name][0] != test:
            first, what = self._hung[name]
            return (
                f"Did not run: {what or 'the code'} in an earlier test of {name} ({first.rsplit('::', 1)[-1]}), so "
                "this test did not call it again. A hang costs the deadline on every test it reaches; fix that "
                "one, then grade again."
            )
        if self._ends is not None and time.monotonic() >= self._ends:
            return (
                f"Did not run: the run's deadline ({self.run_seconds:g} s, --run-deadline) had passed. Earlier "
                "tests took that long; fix the slowest (see their failures), then grade again."
            )
        return None

    def concurrency_wait(self, name: str) -> float:
        return self.after_sequential if name in self._sequential else WAIT

    def record_sequential(self, name: str) -> None:
        self._sequential.add(name)


class Challenge:
    """One challenge, for one grading test."""

    def __init__(
        self,
        name: str,
        source: Path,
        shown_as: str,
        implementations: Implementations,
        deadlines: Deadlines,
        *,
        test: str = "",
    ) -> None:
        self.test = test
        """The node id of the test this is for."""
        self.name = name
        """The folder name, `02_bounded_loop`."""
        self.source = source
        """The implementation file under test: the learner's exercise.py, or `--impl DIR/<name>.py`."""
        self.shown_as = shown_as
        self._implementations = implementations
        self._deadlines = deadlines
        self._dialogues: list[Dialogue] = []

    @property
    def worker(self) -> WorkerProcess:
        """The process running the implementation, with its module imported."""
        __tracebackhide__ = True
        stopped = self._deadlines.stopped(self.name, self.test)
        if stopped:
            pytest.fail(stopped, pytrace=False)
        try:
            return self._implementations.get(
                self.source, self.shown_as, self._deadlines.seconds, take_away=TAKEN_AWAY["collect_stream"]
            )
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
        raises: str = "RuntimeError",
        unknown_tools: Collection[str] = (),
        refuse: int | None = None,
        refuse_status: int = 400,
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
            raises=raises,
            unknown_tools=unknown_tools,
            refuse=refuse,
            refuse_status=refuse_status,
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

    def record_hang(self, what: str = "") -> None:
        self._deadlines.record_hang(self.name, self.test, what)

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
