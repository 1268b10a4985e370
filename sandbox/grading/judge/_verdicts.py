"""How a dialogue fails a test: the transcript of a request, the provider's words, the rule, a hint.

`Verdicts` is the half of `Dialogue` that turns what the journal holds into feedback: a rejected
request (with the root cause read from the conversation itself), a loop that did not add to the
conversation, an exception from the learner's code, a hang, results out of order.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from ...adapters._transport import Journal
from ...engine._engine import Exchange
from ...engine._scenario import Scenario
from ...messages._types import Response, ToolCall
from ...wire import Rule, get_wire_format
from ._checks import check_history, diagnose
from ._clients import Sent
from ._feedback import Feedback, learner_traceback
from ._lessons import APPEND, ORDER, STREAM, Lesson, lesson_for, lesson_for_diagnosis
from ._transcript import describe_call, quote, render, reply_line

__all__ = ["SIGNATURES", "Verdicts", "short"]

SIGNATURES = {
    "apply_tool_results": "(req, resp, results)",
    "complete": "(client, req, run)",
    "collect_stream": "(stream)",
}
"""The learner's functions, as the starter files declare them and the graders call them."""


class Verdicts:
    """The feedback half of `Dialogue`, which sets these attributes."""

    journal: Journal
    sent: Sent
    scenario: Scenario
    provider: str
    budget: int
    function: str
    """The learner's function under test, by name, for headlines."""
    source: Path
    """The file it lives in: tracebacks keep only its frames."""
    produced = "run(call) returned"
    """Where each call's output came from, as the learner knows it (challenge 01: `results` held it)."""

    def expected(self, call: ToolCall) -> object:
        """What the result of `call` must carry (see `Dialogue.expected`)."""
        raise NotImplementedError

    @property
    def actor(self) -> str:
        """Who a headline names: `complete()`, or `your program` when it is not a Python function."""
        return f"{self.function}()"

    @property
    def where(self) -> str:
        return f"scenario {self.scenario.name!r} on {self.provider}"

    def check_progress(self) -> None:
        """Each request must carry more than the one before: a loop that appends nothing asks in vain.

        A request whose messages are unknown (a program's body too malformed to read) is not compared:
        the provider's own error speaks for it."""
        __tracebackhide__ = True
        sizes: list[int | None] = []
        for exchange in self.journal:
            messages = exchange.conversation.messages if exchange.conversation is not None else None
            messages = messages if messages is not None else self.sent.get(exchange.request_body)
            sizes.append(len(messages) if messages is not None else None)
        for number in range(1, len(sizes)):
            before, now = sizes[number - 1], sizes[number]
            if before is not None and now is not None and now <= before:
                self.fail(
                    f"{self.actor} on {self.where}: request {number + 1} carried the same conversation as "
                    f"request {number}; nothing was appended in between, so the model could only ask again.",
                    exchange=self.journal[number],
                    lesson=APPEND,
                )

    def check_rejections(self, headline: str = "") -> None:
        __tracebackhide__ = True
        for number, exchange in enumerate(self.journal, 1):
            if exchange.error is not None:
                self._rejected(exchange, number, headline)

    def _rejected(self, exchange: Exchange, number: int, headline: str) -> NoReturn:
        __tracebackhide__ = True
        error = exchange.error
        assert error is not None
        if error.rule is Rule.BUDGET:
            title = (
                f"{self.actor} on {self.where} never stopped: the sandbox's budget of {self.budget} requests ended it."
            )
        else:
            who = headline or f"{self.actor} on {self.where}"
            title = f"{who}: the provider rejected request {number} of {len(self.journal)}."
        lesson = lesson_for(error.rule)
        if error.rule is Rule.HISTORY_MISMATCH and exchange.is_stream:
            lesson = STREAM  # on a stream there is no resp.message: the turn was rebuilt, and rebuilt wrong
        mark = error.message_index
        details = []
        problem = diagnose(self.sent.get(exchange.request_body, ()))
        if problem is not None and error.rule is not Rule.BUDGET:
            details.append(f"In the conversation, {problem.headline}")
            lesson = lesson_for_diagnosis(problem.kind)
            mark = problem.index
        Feedback(
            title,
            details=details,
            transcript_title=f"Conversation as sent in request {number}",
            transcript=self.transcript(exchange, mark),
            provider=f"{exchange.provider} {exchange.status}: {error.message}",
            lesson=lesson,
        ).fail()

    def check_response(self, value: object) -> Response:
        __tracebackhide__ = True
        if not isinstance(value, Response):
            self.fail(
                f"{self.function}() returned {short(value)}; it should return a skyl.Response (the one "
                "the model sent last, whose tool_calls() is empty)."
            )
        return value

    def check_order(self, exchange: Exchange) -> None:
        __tracebackhide__ = True
        if exchange.conversation is None:
            return
        problem = check_history(
            exchange.conversation.messages,
            self.sent.get(exchange.request_body, ()),
            self.expected,
            has_call_ids=get_wire_format(self.provider).has_call_ids,
            produced=self.produced,
        )
        if problem is not None:
            lesson = lesson_for_diagnosis(problem.kind) if problem.kind else ORDER
            self.fail(f"In {self.where}, {problem.headline}", exchange=exchange, mark=problem.index, lesson=lesson)

    def raised(self, error: BaseException, instead: str, lesson: Lesson | None = None) -> NoReturn:
        __tracebackhide__ = True
        details = self.learner_frames(error) + _what_was_parsed(error)
        if isinstance(error, TypeError) and len(details) == 1 and self.function in SIGNATURES:
            # No frame of the learner's file: the call itself failed, so the signature is not the starter's.
            details.append(
                f"{self.function}() must take {SIGNATURES[self.function]}, as in the starter exercise.py: "
                f"the grader calls {self.function}{SIGNATURES[self.function]}."
            )
        self.fail(
            f"{self.function}() on {self.where} raised {type(error).__name__} instead of {instead}:",
            details=details,
            exchange=self.journal.last,
            lesson=lesson,
        )

    def hung(self, seconds: float, challenge: str, later: float, *, first: float | None = None) -> NoReturn:
        """`first` is the full deadline, when `seconds` is the shorter one that follows a hang (a generated
        example's replay runs after its first hang: the learner should not read 0.5 s as the limit)."""
        __tracebackhide__ = True
        shortened = f" (shortened after an earlier hang; the first run had {first:g} s)" if first else ""
        self.fail(
            f"{self.function}() on {self.where} did not finish within {seconds:g} s{shortened}, so the grader stopped "
            f"waiting. It had made {len(self.journal)} request(s). The request budget stops a loop that keeps "
            "calling the model, so this code is stuck somewhere else. Look for:",
            details=[
                "- a `while` loop whose condition never changes (is a new request sent each time round?);",
                "- an await that never finishes, or a call that blocks (input(), time.sleep(), a lock).",
                f"Later tests of {challenge} fail at once without running it, so one hang cannot stall the run.",
            ],
            exchange=self.journal.last,
        )

    def learner_frames(self, error: BaseException | None) -> list[str]:
        return ["    " + line for line in learner_traceback(error, self.source)] if error else []

    def transcript(self, exchange: Exchange, mark: int | None) -> list[str]:
        messages = exchange.conversation.messages if exchange.conversation else self.sent.get(exchange.request_body)
        lines = render(messages, mark=mark) if messages else ["   (not available)"]
        return lines + [reply_line(exchange.turn.message)] if exchange.turn else lines

    def fail(
        self,
        headline: str,
        *,
        details: list[str] | None = None,
        exchange: Exchange | None = None,
        mark: int | None = None,
        lesson: Lesson | None = None,
    ) -> NoReturn:
        __tracebackhide__ = True
        feedback = Feedback(headline, details=details or [], lesson=lesson)
        if exchange is not None:
            number = next((n for n, ex in enumerate(self.journal, 1) if ex is exchange), len(self.journal))
            feedback.transcript_title = f"Conversation as sent in request {number} ({self.where})"
            feedback.transcript = self.transcript(exchange, mark)
        feedback.fail()


def short(value: object) -> str:
    """A returned value as a person would describe it."""
    if isinstance(value, Response):
        calls = ", ".join(describe_call(call, with_id=False) for call in value.tool_calls())
        return f"a Response asking for {calls}" if calls else f"a Response saying {quote(value.text())}"
    text = repr(value)
    return (text if len(text) <= 80 else text[:77] + "...") + f" ({type(value).__name__})"


def _what_was_parsed(error: BaseException) -> list[str]:
    """A JSONDecodeError's feedback shows the text json.loads was given: '' or 'is"}' says more than
    'Expecting value: line 1 column 1'. ast.literal_eval's ValueError says the arguments are JSON."""
    parsed = getattr(error, "parsed", None)
    if not isinstance(parsed, str):
        if isinstance(error, ValueError) and str(error).startswith("malformed node or string"):
            return [
                "    ast.literal_eval reads Python, and a call's arguments are JSON (true, false, null): parse "
                "them with json.loads."
            ]
        return []
    shown = repr(parsed) if len(parsed) < 300 else repr(parsed[:120]) + " ... (longer)"
    if not parsed.strip():
        why = (
            "an empty string: a call without arguments may stream no ToolCallDelta at all (Anthropic sends "
            'one empty fragment), so its joined fragments are "" and its arguments are {}.'
        )
    else:
        why = (
            "not one whole JSON document: were a call's fragments joined (+=), or did each one overwrite "
            "the last (=), or were several calls' fragments mixed?"
        )
    return [f"    json.loads was given {shown}: {why}"]
