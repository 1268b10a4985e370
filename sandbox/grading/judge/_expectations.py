"""What a dialogue expects of the learner's code, one `expect_*` method per kind of task: each returns,
or fails the test with feedback that teaches.

`Expectations` is the middle layer of `Dialogue`: `Verdicts` below it turns the journal into
feedback, `Dialogue` above it runs the learner's code and sets the attributes declared here.
"""

from __future__ import annotations

import traceback
from typing import Any, NoReturn

from ..._exceptions import ProviderError
from ...messages._types import Request, Response, StopReason
from ..boundary._marshal import learner_frames
from ..boundary._runner import Outcome
from ._checks import missing_from_report
from ._clients import RecordingAsyncClient, RecordingClient, StreamHandle
from ._feedback import Feedback
from ._lessons import (
    ASYNCIO_RUN,
    AWAIT,
    AWAIT_CLIENT,
    BOUND,
    CONCURRENT,
    END,
    GATHER_LIST,
    MISSING,
    PROVIDER_FAILED,
    REPORT,
    STREAM,
    TOOL_FAILED,
    WHOLE_TURN,
    Lesson,
)
from ._owner import Owner
from ._probe import ConcurrencyProbe
from ._rebuilt import differences_from
from ._refusal import RefusingTransport, refusal_text, refused_means
from ._transcript import describe_call, quote
from ._verdicts import Verdicts, short

__all__ = ["Expectations"]


class Expectations(Verdicts):
    """The `expect_*` half of `Dialogue`, which sets these attributes."""

    owner: Owner
    client: RecordingClient | RecordingAsyncClient
    request: Request
    refusing: RefusingTransport | None
    """With `refuse=N`, the provider refuses request N and every later one as too long (`_refusal`)."""
    probe: ConcurrencyProbe | None
    tool_errors: list[BaseException]
    """What `run` raised: a learner exception caused by one of these came from a failing tool."""
    _errors_expected: set[str]

    def check_awaited(self, outcome: Outcome, reply: dict[str, Any]) -> None:
        """Challenge 08: every coroutine the learner was handed (the client's, run's) was awaited.

        The worker counts the ones never awaited (and closes them, so no warning about them surfaces
        later in another test); the test that ran the code reports them."""
        __tracebackhide__ = True
        client = int(reply.get("client_never_awaited") or 0)
        tools = int(reply.get("never_awaited") or 0)
        error = outcome.error
        if client:
            self.fail(
                f"{self.function}() on {self.where} called client.complete(req) without awaiting it: the "
                "request was never sent, and resp is a coroutine, not a Response.",
                details=self.learner_frames(error),
                lesson=AWAIT_CLIENT,
            )
        if tools and isinstance(error, RuntimeError) and "asyncio.run()" in str(error):
            self.fail(
                f"{self.function}() on {self.where} called asyncio.run() inside async code: {self.function}() "
                "already runs in an event loop, and asyncio.run cannot start another one inside it.",
                details=self.learner_frames(error),
                lesson=ASYNCIO_RUN,
            )
        if tools:
            after = (
                f"and {self.function}() raised {type(error).__name__}:"
                if error is not None
                else "and a coroutine object went where its output belongs."
            )
            frames = self._frames(error) if error is not None else []
            gather_list = isinstance(error, TypeError) and bool(frames) and "gather(" in (frames[-1].line or "")
            self.fail(
                f"{self.function}() on {self.where} called run(call) without awaiting it: the tool never ran, {after}",
                details=self.learner_frames(error),
                lesson=GATHER_LIST if gather_list else AWAIT,
            )

    def expect_answer(self, outcome: Outcome, *, bound: int | None = None) -> Response:
        """The loop returned the model's final answer, and every request before it was right."""
        __tracebackhide__ = True
        self.check_progress()
        self.check_rejections()
        if outcome.error is not None:
            self.raised(outcome.error, "returning the model's final answer", self._lesson_for_raise(outcome.error))
        response = self.check_response(outcome.value)
        last = self.journal.last
        if last is None or last.turn is None:
            self.fail(f"{self.function}() returned without asking the model anything.")
        calls = response.tool_calls()
        if calls:
            self.fail(
                f"{self.function}() returned a response that still asks for "
                f"{', '.join(describe_call(call) for call in calls)}: the model was not done "
                f"(its stop reason said {response.stop_reason.value!r}).",
                exchange=last,
                lesson=END,
            )
        asked = last.turn.message.tool_calls()
        if asked:
            self.fail(
                f"{self.function}() returned a turn without tool calls, but the model's last turn asked for "
                f"{', '.join(describe_call(call, with_id=False) for call in asked)}: the calls were lost on the "
                "way, and the loop stopped before the model was done.",
                exchange=last,
                lesson=STREAM if last.is_stream else END,
            )
        if response.text() != last.turn.message.text():
            self.fail(
                f"{self.function}() returned a response that is not the model's final answer: its text is "
                f"{quote(response.text())}, the answer's is {quote(last.turn.message.text())}. Return the "
                "response whose tool_calls() is empty, as you received it.",
                exchange=last,
            )
        if bound is not None and len(self.journal) > bound:
            self.fail(f"{self.function}() made {len(self.journal)} requests; at most {bound} are allowed.")
        self.check_order(last)
        return response

    def expect_gave_up(self, outcome: Outcome, *, bound: int = 5) -> BaseException:
        """The loop raised once the bound was hit: after exactly `bound` requests."""
        __tracebackhide__ = True
        self.check_progress()
        self.check_rejections()
        made = len(self.journal)
        if made == 0 and outcome.error is not None:
            self.raised(outcome.error, "asking the model")
        if made > bound:
            ending = "raising" if outcome.error is not None else "returning"
            self.fail(
                f"{self.function}() on {self.where} made {made} requests before {ending}; the bound is {bound}. "
                "A legitimate task may need more rounds, but the loop must still give up at the bound.",
                lesson=BOUND,
            )
        if outcome.error is None:
            self.fail(
                f"{self.function}() returned {short(outcome.value)} after {made} requests, but the model "
                "was still asking for tools. When the bound is hit the loop should raise an exception, so "
                "the caller knows it gave up.",
                exchange=self.journal.last,
                lesson=BOUND,
            )
        if made < bound:
            self.fail(
                f"{self.function}() raised after only {made} request(s), while the model was still working. "
                f"A legitimate task can take several rounds: give up after {bound} requests, not fewer.",
                details=self.learner_frames(outcome.error),
                lesson=STREAM if self._in_collector(outcome.error) else BOUND,
            )
        last = self.journal.last
        assert last is not None
        self.check_order(last)
        return outcome.error

    def expect_provider_error_raised(self, outcome: Outcome, *, lesson: Lesson = PROVIDER_FAILED) -> BaseException:
        """Challenges 07 and 10: the provider refused a request (`refuse=N`); the loop let its error
        through, rather than swallowing it and resending, or returning an earlier response. `lesson`:
        the rule of the challenge being graded."""
        __tracebackhide__ = True
        assert self.refusing is not None, "expect_provider_error_raised() needs a dialogue opened with refuse=N"
        self.check_progress()
        self.check_rejections()
        at = self.refusing.at
        if not self.refusing.refused:
            if outcome.error is not None:
                self.raised(outcome.error, f"reaching request {at}")
            made = len(self.journal)
            self.fail(f"{self.function}() on {self.where} made {made} request(s), then stopped; it should reach {at}.")
        status, model = self.refusing.status, self.refusing.model
        refusal = f"{self.provider} {status}: {refusal_text(self.provider, status, model)}"
        more = self.refusing.refused - 1 + len(self.journal) - (at - 1)
        if outcome.error is None or more > 0:
            went_on = f"sent {more} more request(s), then " if more > 0 else ""
            ended = (
                f"raised {type(outcome.error).__name__}"
                if outcome.error is not None
                else (f"returned {short(outcome.value)}")
            )
            Feedback(
                f"{self.function}() on {self.where}: the provider refused request {at} with a {status}, and "
                f"{self.function}() {went_on}{ended}. {refused_means(lesson, status, 'reach the caller')}",
                provider=refusal,
                lesson=lesson,
            ).fail()
        return outcome.error

    def expect_runaway_report(self, error: BaseException) -> None:
        """The error names the bound, the calls in order, and says to check what the tools return."""
        __tracebackhide__ = True
        turns = [[call.name for call in ex.turn.message.tool_calls()] for ex in self.journal if ex.turn]
        sequences = [[name for turn in turns for name in turn], [name for turn in turns[:-1] for name in turn]]
        tools = {tool.name for tool in self.scenario.tools}
        missing = missing_from_report(str(error), len(self.journal), sequences, tools)
        if missing:
            self.fail(
                f"{self.function}() gave up on {self.where}, but its error does not say enough to debug "
                f"the runaway. It said:\n    {type(error).__name__}: {error}\nIt should also name:",
                details=[f"- {item}" for item in missing],
                lesson=REPORT,
            )

    def expect_applied(self, outcome: Outcome) -> Response:
        """Challenge 01: the learner appended the turn and the results; the provider accepts them."""
        __tracebackhide__ = True
        self.produced = "results held"
        if outcome.error is not None:
            self.raised(outcome.error, "appending to req.messages", MISSING if self._errors_expected else None)
        if outcome.value is not None:
            self.fail(
                f"{self.function}() returned {short(outcome.value)}; it should return None and change "
                "req.messages in place."
            )
        if len(self.journal) != 1:
            self.fail(f"{self.function}() sent requests itself; it should only append to req.messages.")
        assert isinstance(self.client, RecordingClient)
        try:
            answer: Response | None = self.client.complete(self.request)
        except ProviderError:
            answer = None  # the journal holds the rejection; failing here would chain the client's error
        self.check_rejections(f"The conversation {self.function}() built for {self.where}")
        assert answer is not None
        first, last = self.journal[0], self.journal[-1]
        assert first.turn is not None and last.conversation is not None
        appended = len(last.conversation.messages) - 1
        wanted = 1 + len(first.turn.message.tool_calls())
        if appended == 0:
            self.fail(
                f"{self.function}() did not append anything to req.messages: the request still holds only the "
                "user's message. Append to req.messages itself, not to a copy of it.",
                exchange=last,
            )
        if appended != wanted:
            self.fail(
                f"{self.function}() appended {appended} message(s); the turn and one result per call make {wanted}.",
                exchange=last,
            )
        self.check_order(last)
        return answer

    def expect_rebuilt(self, outcome: Outcome, stream: StreamHandle) -> Response:
        """Challenge 05: the learner's collector rebuilt the turn the stream carried."""
        __tracebackhide__ = True
        self.check_rejections()
        if outcome.error is not None:
            self.raised(outcome.error, "returning the rebuilt turn", STREAM)
        response = self.check_response(outcome.value)
        reference = stream.reference()
        if reference is None:
            self.fail(f"{self.function}() returned before reading the stream to its end.", lesson=STREAM)
        differences = differences_from(response, reference)
        if differences:
            reasoning = self.scenario.reasoning or any(
                line.startswith(("reasoning", "order of parts")) for line in differences
            )
            self.fail(
                f"{self.function}() rebuilt a different turn from the one the stream carried:",
                details=[f"- {line}" for line in differences],
                lesson=WHOLE_TURN if reasoning else STREAM,
            )
        return response

    def expect_streamed(self) -> None:
        """Challenge 05: every turn was streamed."""
        __tracebackhide__ = True
        for number, exchange in enumerate(self.journal, 1):
            if exchange.conversation is not None and not exchange.conversation.stream:
                self.fail(
                    f"{self.function}() sent request {number} without streaming: use client.stream(req) "
                    "for every turn, and rebuild the turn with your collect_stream().",
                    lesson=STREAM,
                )

    def expect_concurrent(self) -> None:
        """Challenge 08: the calls of each turn were all in flight at once."""
        __tracebackhide__ = True
        assert self.probe is not None, "expect_concurrent() needs a dialogue opened with mode='async'"
        if self.probe.one_at_a_time is not None:
            number, call = self.probe.one_at_a_time
            self.owner.record_sequential()
            most, total = self.probe.at_once()
            waited = f"run({describe_call(call)}) waited {self.probe.wait:g} s for the turn's other calls to start"
            self.fail(
                f"{self.function}() ran the calls of turn {number} {self.probe.how_they_ran()}: "
                + (
                    f"{waited}, and none did."
                    if most <= 1
                    else f"{waited}, and only {most - 1} did: a semaphore or batches capped how many ran at "
                    f"once. Start all {total} before awaiting any."
                ),
                lesson=CONCURRENT,
            )

    def raised(self, error: BaseException, instead: str, lesson: Lesson | None = None) -> NoReturn:
        """A failing tool behind the learner's exception (even wrapped in another) outranks any lesson."""
        __tracebackhide__ = True
        chain: BaseException | None = error
        for _ in range(8):
            if chain is None:
                break
            if any(chain is failure for failure in self.tool_errors):
                lesson = TOOL_FAILED
                break
            chain = chain.__cause__ or chain.__context__
        super().raised(error, instead, lesson)

    def _frames(self, error: BaseException) -> list[traceback.FrameSummary]:
        return learner_frames(error, self.source)

    def _in_collector(self, error: BaseException) -> bool:
        return any(frame.name == "collect_stream" for frame in self._frames(error))

    def _lesson_for_raise(self, error: BaseException) -> Lesson | None:
        """Why the learner's code raised before the answer: a bug in their collector, or a bound set too
        low (a `raise` of their own while the model was still asking for tools)."""
        if self._in_collector(error):
            return STREAM
        frames = self._frames(error)
        last = self.journal.last
        deliberate = bool(frames) and (frames[-1].line or "").lstrip().startswith("raise")
        if not deliberate or last is None or last.turn is None:
            return None
        said = last.turn.raw_stop_reason or last.turn.stop_reason.value
        if not last.turn.message.tool_calls():
            return Lesson(
                END.rule,
                f"The loop raised after request {len(self.journal)}, whose turn carried no tool calls: that turn "
                f"is the model's answer, whatever its stop reason ({said!r}) says. Return it.",
            )
        if last.turn.stop_reason is not StopReason.TOOL_USE:
            return Lesson(
                END.rule,
                f"The loop raised after request {len(self.journal)}, whose turn said stop reason {said!r} but "
                "still carried tool calls. A stop reason such as max_tokens, stop or STOP is not the bound and "
                "not an error: run the calls and go on. Decide with resp.tool_calls(); raise only once the "
                "bound (5 requests) is hit.",
            )
        if any(step.repeat != "once" for step in self.scenario.steps):
            return BOUND
        needed = len(self.scenario.steps)
        return Lesson(
            BOUND.rule,
            f"The loop gave up after {len(self.journal)} request(s) while the model was still working: "
            f"{self.where} needs {needed} ({needed - 1} rounds of tool calls, then the answer). "
            "Legitimate tasks rarely need more than three rounds: bound the loop at 5, not fewer.",
        )
