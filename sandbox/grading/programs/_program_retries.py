"""Challenge 10's verdicts for a program in any language: it retried what the provider asked it to
retry, after the hint and a few times at most, never any other status, without repeating itself.

The checks on the wire are the Python grader's (`judge._retries.Retries`: what followed each fault,
how often one request was sent, which tools ran twice), read from the case's journal and its tool
desk. What differs is how a program ends: it prints the answer and exits 0, or it gives up with a
non-zero exit and one line on stderr that names the status, the attempts and what to check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from ..boundary._program import ProgramRun
from ..judge._retries import RetryChecks, broken, delivered, describe_fault, status_seen, unsaid
from ..judge._transcript import quote
from ._program_lessons import GIVE_UP_AND_SAY_WHY, RETRY_AFTER_THE_HINT, RETRY_THE_SAME_REQUEST
from ._tooldesk import ToolDesk, scripted_key

__all__ = ["ProgramRetries"]

_SHOWN_LINES = 12


class ProgramRetries(RetryChecks):
    """Mixed into `ProgramDialogue`: the attributes below are the dialogue's."""

    retry_lesson = RETRY_AFTER_THE_HINT
    no_repeat_lesson = RETRY_THE_SAME_REQUEST
    give_up_lesson = GIVE_UP_AND_SAY_WHY
    hint_name = "Wait the provider's hint (retry-after-ms, retry-after, or Gemini's retryDelay)"
    desk: ToolDesk

    if TYPE_CHECKING:  # the dialogue's own

        def _check_ran(self, run: ProgramRun) -> None: ...

        def expect_answer(self, run: ProgramRun, *, bound: int = 5) -> None: ...

    def tool_runs(self) -> list[str]:
        """The tool runs the program asked the sandbox for, each by the scenario's name for the call
        (whatever order its arguments came in), as the shared checks count them."""
        return [
            scripted_key(self.desk.scenario, call.name, call.arguments) or repr(call) for _, call, _ in self.desk.runs
        ]

    def expect_retried_answer(self, run: ProgramRun, *, bound: int = 5) -> None:
        """Every fault retried as it should be, and the model's answer printed, within `bound` rounds."""
        self._check_ran(run)
        self.check_retries()
        exchanges = list(self.journal)
        last = exchanges[-1] if exchanges else None
        if last is not None and broken(last):
            attempts = sum(1 for exchange in exchanges if exchange.request_body == last.request_body)
            tried = "on its first attempt" if attempts == 1 else f"after {attempts} attempts"
            if run.returncode != 0:
                self._fail_with_stderr(
                    f"{self.actor} on {self.where} ended with {run.exit_description} after {describe_fault(last)} "
                    f"{tried}, without sending that request again. That is one the provider asks you to retry.",
                    run,
                    exchange=last,
                    lesson=self.retry_lesson,
                )
            self.fail(
                f"{self.actor} on {self.where} exited 0 after {describe_fault(last)}, printing "
                f"{quote(run.stdout.strip())}, without sending that request again: what arrived of a broken answer "
                "is not the model's turn. Discard it and send the same request again.",
                exchange=last,
                lesson=self.no_repeat_lesson,
            )
        self.check_rounds(run.returncode != 0, bound)
        full = self.journal
        self.journal = delivered(full)  # the ordinary verdicts judge what got through
        try:
            self.expect_answer(run, bound=bound)
        finally:
            self.journal = full

    def expect_retries_exhausted(self, run: ProgramRun) -> None:
        """The provider kept failing one request: the program retried, then exited non-zero with a line
        on stderr that names the status, the attempts and what to check."""
        self._check_ran(run)
        self.check_retries()
        exchanges = list(self.journal)
        last = exchanges[-1] if exchanges else None
        if last is None or not broken(last):
            self._fail_with_stderr(
                f"{self.actor} on {self.where} ended with {run.exit_description} before the request the provider "
                "kept refusing.",
                run,
            )
        attempts = sum(1 for exchange in exchanges if exchange.request_body == last.request_body)
        if attempts < 2:
            self._fail_with_stderr(
                f"{self.actor} on {self.where} gave up after {describe_fault(last)} without retrying once.",
                run,
                exchange=last,
                lesson=self.retry_lesson,
            )
        if run.returncode == 0:
            self.fail(
                f"{self.actor} on {self.where} exited 0, printing {quote(run.stdout.strip())}, after {attempts} failed "
                "attempts; when the retries run out it should exit non-zero, so the caller knows no answer came.",
                lesson=self.give_up_lesson,
            )
        missing = unsaid(run.stderr, status_seen(last), attempts)
        if missing:
            shown = run.stderr.strip().splitlines()[-_SHOWN_LINES:] or ["(nothing)"]
            self.fail(
                f"{self.actor} gave up on {self.where}, but what it wrote on stderr does not say enough to act on. "
                "It wrote:\n" + "\n".join(f"    {line}" for line in shown) + "\nIt should also name:",
                details=missing,
                lesson=self.give_up_lesson,
            )

    def _fail_with_stderr(self, headline: str, run: ProgramRun, **how: Any) -> NoReturn:
        lines = run.stderr.rstrip().splitlines()[-_SHOWN_LINES:]
        details = ["Its stderr:", *(f"    {line}" for line in lines)] if lines else ["Its stderr was empty."]
        self.fail(headline, details=details, **how)
