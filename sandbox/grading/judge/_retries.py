"""Challenge 10's verdicts: a loop that retries what the provider asks it to retry, and nothing else,
without repeating itself.

Read from the journal alone (what reached the provider) and the grader's own count of tool runs:
after a scripted fault the next request must be the same bytes (nothing appended, nothing kept of a
broken answer), must not come before the provider's hint, and one request gets at most
`MAX_ATTEMPTS`; a refusal that is not a fault is never sent again; a tool whose result is in the
history never runs twice. The rest is the ordinary tool-loop verdict, on the exchanges that got
through (`expect_answer`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ...adapters._transport import Journal
from ...engine._engine import Exchange
from ...engine.faults import FaultError
from ..boundary._runner import Outcome
from ._lessons import Lesson

__all__ = [
    "GIVE_UP",
    "MAX_ATTEMPTS",
    "NO_REPEAT",
    "RETRY",
    "Retries",
    "broken",
    "status_seen",
    "delivered",
    "describe_fault",
    "unsaid",
]

MAX_ATTEMPTS = 3
"""Attempts of one request: the first and two retries, as the official SDKs' `max_retries=2`."""

RETRY = Lesson(
    "Retry a 429, 529 or 503 (and a connection that broke) after the provider's hint, a few times; never "
    "any other error (a 400, 401, 403, 404).",
    "The provider said to try again later: wait err.retry_after seconds (your own short backoff when it is "
    "None), then send the same request again. Any other status means the request itself is wrong (a 400), "
    "or the key or the model is (401, 403, 404): sending it again gets the same error. Retry the statuses "
    "you know are worth it, never everything but a 400.",
)
NO_REPEAT = Lesson(
    "A retry sends the same conversation again: nothing appended twice, nothing kept of a broken answer, "
    "no tool run twice.",
    "Retry around client.complete(req) (or the whole stream) alone: the turn and the results are appended "
    "once, after an answer arrived whole. A stream that broke is discarded, never half appended.",
)
GIVE_UP = Lesson(
    "Give up after a few attempts, with an error that names the status, the attempts and what to check.",
    "When the last attempt fails, raise: say which status the provider kept sending, how many attempts you "
    "made, and what to check (the provider's status page, your rate limits), so the caller can act.",
)
_COUNTED = r"(?:attempts?|tries|times|requests)\b"
_COUNTING = r"\b(?:attempts?|attempted|tries|tried)\b"


def _number(value: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![\d.]){value}(?![\d]|\.\d)")


_ADVICE = re.compile(r"\b(check|status page|try again later|retry later|rate limit|quota|overload)", re.IGNORECASE)


class RetryChecks:
    """What followed each fault, shared by the Python dialogue and a program's: mixed in, the
    attributes below are the dialogue's."""

    journal: Any
    sent: Any
    where: str
    provider: str
    retry_lesson = RETRY
    no_repeat_lesson = NO_REPEAT
    give_up_lesson = GIVE_UP
    """The lessons the shared checks name: a program's dialogue has its own, in the contract's words."""
    hint_name = "Wait err.retry_after seconds"
    """How the hint reads in the learner's code."""

    if TYPE_CHECKING:  # the dialogue's own, from `Verdicts`

        def fail(self, headline: str, **kwargs: Any) -> NoReturn: ...

        @property
        def actor(self) -> str: ...

        def tool_runs(self) -> list[str]:
            """The calls the loop ran, in order, each as the scenario names it (`get_weather(city='Paris')`)."""

    def check_retries(self) -> None:
        """What followed each failure, in journal order (see the module docstring)."""
        __tracebackhide__ = True
        exchanges = list(self.journal)
        for number, (failed, after) in enumerate(zip(exchanges, exchanges[1:], strict=False), 1):
            if broken(failed):
                self._check_resent(number, failed, after)
            elif failed.error is not None and after.request_body == failed.request_body:
                self.fail(
                    f"{self.actor} on {self.where} sent request {number} again after the provider refused it "
                    f"with a {failed.status}: {failed.error.message}",
                    exchange=after,
                    lesson=self.retry_lesson,
                )
        counts = Counter(exchange.request_body for exchange in exchanges)
        body, most = counts.most_common(1)[0] if counts else (b"", 0)
        if most > MAX_ATTEMPTS:
            at = next(exchange for exchange in exchanges if exchange.request_body == body)
            self.fail(
                f"{self.actor} on {self.where} sent one request {most} times; give up after "
                f"{MAX_ATTEMPTS} attempts (the first and {MAX_ATTEMPTS - 1} retries), as the official SDKs do.",
                exchange=at,
                lesson=self.give_up_lesson,
            )
        self._check_runs()

    def check_rounds(self, gave_up: bool, bound: int) -> None:
        """A loop that gave up at its bound while the model was still working, having spent rounds on
        retries: told that a retry is the same round again, not to raise its bound."""
        __tracebackhide__ = True
        exchanges = list(self.journal)
        got = list(_through(self.journal))
        if not gave_up or len(exchanges) < bound or len(got) >= bound or not got:
            return
        last = got[-1].turn
        if last is None or not last.message.tool_calls():
            return
        self.fail(
            f"{self.actor} on {self.where} gave up after {len(exchanges)} requests, {len(exchanges) - len(got)} of "
            f"them retries, while the model was still working: it counted each retry as one of its {bound} "
            "rounds. A retry is the same round sent again: retry around the model request alone, so the "
            "rounds count the model's answers.",
            lesson=self.no_repeat_lesson,
        )

    def _check_resent(self, number: int, failed: Exchange, after: Exchange) -> None:
        __tracebackhide__ = True
        if after.request_body != failed.request_body:
            self.fail(
                f"{self.actor} on {self.where}: request {number} got {describe_fault(failed)}, and the request "
                f"after it {_difference(failed, after, self.sent)}. A retry sends the same conversation again, "
                "unchanged.",
                exchange=after,
                lesson=self.no_repeat_lesson,
            )
        if isinstance(after.error, FaultError) and after.error.early:
            hint = failed.fault.retry_after if failed.fault is not None else 0
            self.fail(
                f"{self.actor} on {self.where} sent request {number + 1} again before the {hint * 1000:g} ms "
                f"the provider asked for after {describe_fault(failed)}, so it was refused again. "
                f"{self.hint_name} before each retry.",
                exchange=after,
                lesson=self.retry_lesson,
            )

    def _check_runs(self) -> None:
        __tracebackhide__ = True
        asked: Counter[str] = Counter()
        seen: set[bytes] = set()
        for exchange in delivered(self.journal):
            turn = exchange.turn
            if turn is None or exchange.request_body in seen:
                continue
            seen.add(exchange.request_body)
            asked.update(repr(_call(call)) for call in turn.message.tool_calls())
        for key, ran in Counter(self.tool_runs()).items():
            if ran > asked[key]:
                self.fail(
                    f"{self.actor} on {self.where} ran {key} {ran} times, but the model asked for it "
                    f"{asked[key]} time(s). Run a turn's tools once, after its answer arrived whole: a retry, of "
                    "a refused request or of a stream that broke after a call's arguments ended, must not run "
                    "them again (a payment tool would pay twice).",
                    lesson=self.no_repeat_lesson,
                )


class Retries(RetryChecks):
    """Mixed into `Dialogue`: the attributes below are the dialogue's."""

    runs: list[str]
    function: str

    if TYPE_CHECKING:  # the dialogue's own, from `Expectations`

        def expect_answer(self, outcome: Outcome, *, bound: int | None = None) -> Any: ...

        def expect_provider_error_raised(self, outcome: Outcome, *, lesson: Lesson = ...) -> BaseException: ...

    def tool_runs(self) -> list[str]:
        return self.runs

    # -- the verdicts -----------------------------------------------------------------------------

    def expect_retried_answer(self, outcome: Outcome, *, bound: int = 5) -> Any:
        """Every fault retried as it should be, and the model's answer returned, within `bound` rounds."""
        __tracebackhide__ = True
        self.check_retries()
        exchanges = list(self.journal)
        if outcome.error is not None and exchanges and broken(exchanges[-1]):
            self.fail(
                f"{self.function}() on {self.where} raised {type(outcome.error).__name__}: {outcome.error} after "
                f"{describe_fault(exchanges[-1])} on its first attempt. That is one the provider asks you to retry.",
                exchange=exchanges[-1],
                lesson=RETRY,
            )
        if outcome.error is None and exchanges and broken(exchanges[-1]):
            self.fail(
                f"{self.function}() on {self.where} returned after {describe_fault(exchanges[-1])}, without sending "
                "that request again: what arrived of a broken answer is not the model's turn. Discard it and "
                "retry; skyl.collect_stream raises when a stream breaks, so nothing half-made is returned.",
                exchange=exchanges[-1],
                lesson=NO_REPEAT,
            )
        self.check_rounds(outcome.error is not None, bound)
        full = self.journal
        self.journal = delivered(full)  # the ordinary verdicts judge what got through
        try:
            return self.expect_answer(outcome, bound=bound)
        finally:
            self.journal = full

    def expect_refusal_not_retried(self, outcome: Outcome) -> BaseException:
        """The provider refused a request with a status no retry fixes (`refuse=N`): sent once, its
        error let through, judged by this challenge's rule."""
        __tracebackhide__ = True
        return self.expect_provider_error_raised(outcome, lesson=RETRY)

    def expect_retries_exhausted(self, outcome: Outcome) -> BaseException:
        """The provider kept failing one request: the loop retried, then raised an error that names the
        status, the attempts and what to check."""
        __tracebackhide__ = True
        self.check_retries()
        exchanges = list(self.journal)
        last = exchanges[-1] if exchanges else None
        if last is None or not broken(last):
            self.fail(f"{self.function}() on {self.where} stopped before the request the provider kept refusing.")
        attempts = sum(1 for exchange in exchanges if exchange.request_body == last.request_body)
        if attempts < 2:
            self.fail(
                f"{self.function}() on {self.where} gave up after {describe_fault(last)} without retrying once.",
                exchange=last,
                lesson=RETRY,
            )
        if outcome.error is None:
            self.fail(
                f"{self.function}() on {self.where} returned {outcome.value!r:.80} after {attempts} failed attempts; "
                "when the retries run out it should raise, so the caller knows no answer came.",
                lesson=GIVE_UP,
            )
        said = str(outcome.error)
        missing = unsaid(said, status_seen(last), attempts)
        if missing:
            self.fail(
                f"{self.function}() gave up on {self.where}, but its error does not say enough to act on. It "
                f"said:\n    {type(outcome.error).__name__}: {said}\nIt should also name:",
                details=missing,
                lesson=GIVE_UP,
            )
        return outcome.error


def _call(call: Any) -> Any:
    from ...engine._scenario import Call

    return Call(call.name, dict(call.arguments))


def unsaid(said: str, status: int, attempts: int) -> list[str]:
    """What an error that gives up leaves out, of the status, the attempts and what to check. Each is
    read as a number in its context: the attempts beside a word that counts them ("3 attempts", "tried
    3 times", "attempt 3 of 3"), so "3 messages", or the 3 of a 503, is not a count of attempts."""
    missing = []
    if not _number(status).search(said) and not (status == 0 and "connection" in said.lower()):
        missing.append(f"- the status the provider sent ({status})")
    count = _number(attempts).pattern
    if not re.search(rf"{count}\s*(?:/\s*\d+\s*|of\s+\d+\s+)?{_COUNTED}|{_COUNTING}\W{{0,3}}{count}", said, re.I):
        missing.append(f"- the number of attempts, as a count of them ({attempts} attempts)")
    if not _ADVICE.search(said):
        missing.append("- what to check (the provider's status page, your rate limits or quota)")
    return missing


def status_seen(exchange: Exchange) -> int:
    """The status a loop saw for a faulted exchange: a broken answer's is 0 (the 200 it began with
    never became an answer)."""
    fault = exchange.fault
    return 0 if fault is not None and fault.kind in ("cut", "truncated") else exchange.status


def broken(exchange: Exchange) -> bool:
    """A fault the loop should retry: an error status, or an answer that did not arrive whole."""
    return exchange.fault is not None and exchange.fault.kind != "latency"


def describe_fault(exchange: Exchange) -> str:
    fault = exchange.fault
    kind = fault.kind if fault is not None else ""
    if kind in ("rate_limit", "overloaded", "server_error"):
        name = {"rate_limit": "rate limit", "overloaded": "overload", "server_error": "server error"}[kind]
        return f"a {exchange.status} ({name})"
    if kind == "cut":
        return "a connection that broke before the answer was complete"
    if kind == "stream_error":
        return "an error in the middle of the stream"
    return "a stream that ended before its end"


def _difference(failed: Exchange, after: Exchange, sent: Any) -> str:
    """`sent`: the messages the client encoded, for a request the provider refused (no conversation)."""
    before = _messages(failed, sent)
    now = _messages(after, sent)
    if len(now) > len(before):
        added = ", ".join(message.role for message in now[len(before) :])
        return (
            f"carried {len(now) - len(before)} more message(s) ({added}): something of the failed answer, or "
            "a turn appended a second time, went into the history"
        )
    fields = _changed_fields(failed.request_body, after.request_body)
    if fields and len(now) == len(before):
        return f"changed {', '.join(fields)}"
    return f"carried a different conversation ({len(now)} messages; the failed request held {len(before)})"


_HISTORY_FIELDS = ("messages", "input", "contents")
"""Where each wire format keeps the conversation: compared as messages, not as fields."""


def _changed_fields(failed: bytes, after: bytes) -> list[str]:
    """The request fields besides the conversation whose values differ (`max_tokens` 1024, then 512), read
    from both bodies as JSON; [] when either is not a JSON object."""
    try:
        old, new = json.loads(failed), json.loads(after)
    except (ValueError, RecursionError):
        return []
    if not isinstance(old, dict) or not isinstance(new, dict):
        return []
    names = sorted((set(old) | set(new)) - set(_HISTORY_FIELDS))
    missing = "(not sent)"
    return [
        f"{name}: {_shown(old.get(name, missing))} -> {_shown(new.get(name, missing))}"
        for name in names
        if old.get(name, missing) != new.get(name, missing)
    ]


def _shown(value: Any) -> str:
    """A request field's value, short: `1024`, `true`, `{...}`."""
    text = value if value == "(not sent)" else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _messages(exchange: Exchange, sent: Any) -> Sequence[Any]:
    if exchange.conversation is not None:
        return exchange.conversation.messages
    found = sent.get(exchange.request_body)
    return found if found is not None else []


def delivered(journal: Any) -> Journal:
    """The exchanges that got through: a journal view for the ordinary verdicts."""
    view = Journal(maxlen=None, max_bytes=None)
    for exchange in _through(journal):
        view.append(exchange)
    return view


def _through(journal: Any) -> Iterator[Exchange]:
    for exchange in journal:
        if not broken(exchange):
            yield exchange
