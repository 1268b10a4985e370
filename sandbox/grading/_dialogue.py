"""A grading conversation: one scenario on one wire format, with the learner's code in the middle.

A `Dialogue` hands the learner a client wired to the in-process sandbox, a fresh request and a
`run` function, then judges what reached the provider (the transport's journal), how many requests
were made, and the types returned. Every `expect_*` method either returns or fails the test with
feedback that teaches (`_verdicts.Verdicts`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import httpx
import pytest

from .. import _catalogue, _transport
from .._exceptions import ProviderError
from .._scenario import Call, Scenario
from .._types import Request, Response, StopReason, ToolCall, user_text
from ._checks import EXPECT_ERROR, missing_from_report
from ._clients import RecordingAsyncClient, RecordingClient, Sent, StreamHandle, reference_turn
from ._feedback import Feedback, NotStarted
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
from ._marshal import RemoteError, UnreadableValue, error_from_data, from_data, learner_frames, read_value, to_data
from ._probe import ConcurrencyProbe
from ._refusal import RefusingTransport, refusal_text
from ._runner import Outcome, TimedOut, WorkerDied, show_output
from ._transcript import describe_call, quote
from ._verdicts import Verdicts, short

if TYPE_CHECKING:
    from ._challenge import Challenge, LearnerFunction

__all__ = ["BUDGET", "Dialogue"]

BUDGET = 20
"""Model requests per dialogue: a runaway loop fails its own test after this many."""

TAKEN_AWAY = {"collect_stream": False}
"""Parts of skyl a challenge takes away from the learner's code (`take_away_collect_stream`)."""


def call_key(call: ToolCall) -> str:
    """`get_weather(city='Paris')`: how a scenario's `tool_outputs` name a call."""
    return repr(Call(call.name, dict(call.arguments)))


class Dialogue(Verdicts):
    """One scenario on one provider. Build it with `challenge.dialogue(...)`."""

    def __init__(
        self,
        owner: Challenge,
        scenario: str | Scenario,
        provider: str,
        *,
        mode: Literal["sync", "async"] = "sync",
        failing: Mapping[str, str] | None = None,
        unknown_tools: Collection[str] = (),
        refuse: int | None = None,
    ) -> None:
        self.owner = owner
        self.mode = mode
        self.stream_finished = False
        """Whether the learner's code read the stream of `stream_for()` to its end."""
        self.scenario = scenario if isinstance(scenario, Scenario) else _catalogue.get_scenario(scenario)
        self.provider = provider
        self.transport = _transport.transport(self.scenario, budget=BUDGET)
        self.refusing: RefusingTransport | None = None
        """With `refuse=N`, the provider refuses request N and every later one as too long (`_refusal`)."""
        if refuse is not None:
            self.transport = self.refusing = RefusingTransport(self.transport, provider, refuse)
        self.journal = self.transport.journal
        self.sent = Sent()
        self.client: RecordingClient | RecordingAsyncClient
        self.probe: ConcurrencyProbe | None = None
        self.run: Callable[[ToolCall], Any]
        if mode == "async":
            self.client = RecordingAsyncClient(provider, transport=self.transport, sent=self.sent)
            self.probe = ConcurrencyProbe(self.journal, self.output, wait=owner.concurrency_wait())
            self.run = self.probe.run
        else:
            self.client = RecordingClient(provider, transport=self.transport, sent=self.sent)
            self.run = self.output
        self.request = Request(
            model=self.scenario.name, messages=[user_text(self.scenario.prompt)], tools=list(self.scenario.tools)
        )
        self.failing = dict(failing or {})
        """Calls (`get_weather(city='Pariss')`) whose `run` raises RuntimeError with this message."""
        self.unknown_tools = set(unknown_tools)
        """Tool names `run` does not know: it raises KeyError, as a dict of tools would."""
        self.tool_errors: list[BaseException] = []
        """What `run` raised: a learner exception caused by one of these came from a failing tool."""
        self._errors_expected: set[str] = set()
        self.function = "your code"
        self.source = owner.source
        self.budget = BUDGET

    def close(self) -> None:
        if isinstance(self.client, RecordingClient):
            self.client.close()

    # -- the tools the model calls ------------------------------------------------------------------

    def output(self, call: ToolCall) -> str:
        """What `run(call)` returns; raises as the scenario's failing tools do."""
        if not isinstance(call, ToolCall):
            raise TypeError(f"run() takes a skyl.ToolCall from resp.tool_calls(), got {type(call).__name__}: {call!r}")
        key = call_key(call)
        if call.name in self.unknown_tools or key in self.failing:
            error = KeyError(call.name) if call.name in self.unknown_tools else RuntimeError(self.failing[key])
            self.tool_errors.append(error)
            raise error
        if key not in self.scenario.tool_outputs:
            raise LookupError(f"run() was given {key}, which the model did not ask for.")
        return self.scenario.tool_outputs[key]

    def expect_error_for(self, call: ToolCall) -> None:
        """`call` must be answered with an error result (challenge 01: it has no entry in `results`).

        Keyed by name and arguments, not id: Gemini has no call ids on the wire."""
        self._errors_expected.add(call_key(call))

    def expected(self, call: ToolCall) -> object:
        key = call_key(call)
        if key in self._errors_expected or key in self.failing or call.name in self.unknown_tools:
            return EXPECT_ERROR
        return self.scenario.tool_outputs.get(key)

    # -- the sandbox's door, served to the worker (on the endpoint's thread) -------------------------

    def model(self, method: str, path: str, body: bytes, query: str) -> tuple[int, Mapping[str, str], bytes]:
        """One model request from the learner's client: answered by this dialogue's transport (the sandbox,
        or a provider refusing it), journaled there."""
        if self.refusing is not None:
            url = f"http://sandbox{path}" + (f"?{query}" if query else "")
            response = self.refusing.handle_request(httpx.Request(method, url, content=body))
            return response.status_code, dict(response.headers), response.read()
        exchange = self.transport.engine.handle(method, path, body, query=query)
        self.journal.append(exchange)
        return exchange.status, exchange.headers, exchange.body

    async def tool(self, payload: Any) -> dict[str, Any]:
        """One `run(call)` from the learner's code: the output, or the error the tool raises."""
        try:
            call = from_data(payload.get("call") if isinstance(payload, dict) else None)
        except (UnreadableValue, RecursionError):
            call = None
        if not isinstance(call, ToolCall):
            return {"error": {"type": "TypeError", "args": ["run() takes a skyl.ToolCall from resp.tool_calls()"]}}
        try:
            output = await self.probe.run(call) if self.probe is not None else self.output(call)
        except LookupError as error:  # KeyError too: an unknown tool
            return {"error": {"type": type(error).__name__, "args": [str(arg) for arg in error.args]}}
        except RuntimeError as error:
            return {"error": {"type": "RuntimeError", "args": [str(arg) for arg in error.args]}}
        return {"output": output}

    # -- running the learner's code -----------------------------------------------------------------

    def call(self, function: LearnerFunction | Callable[..., Any], *args: Any) -> Outcome:
        """Call the learner's `function(*args)` in its worker, under the deadline. Not started, hangs and
        a worker that died end the test here.

        The client, request, `run` and streams of this dialogue stand for their twins in the worker;
        other arguments travel as data. What the learner's code printed joins this test's output."""
        __tracebackhide__ = True
        self.function = getattr(function, "__name__", "your code")
        seconds = self.owner.deadline()
        worker = self.owner.worker
        base = self.owner.endpoint.open(self)
        message = {
            "op": "call",
            "function": self.function,
            "args": [self._argument(argument) for argument in args],
            "base": base,
            "provider": self.provider,
            "mode": self.mode,
            "take_away": TAKEN_AWAY["collect_stream"],
        }
        reply: dict[str, Any] | None = None
        ended = ""
        try:
            reply = worker.request(message, seconds)
        except TimedOut:
            pass  # failing outside the except block keeps the grader's exception out of the report
        except WorkerDied as died:
            ended = str(died)
        finally:
            self.owner.endpoint.close_door(base)
            show_output(worker)
        if reply is None:
            self.owner.discard_worker()
            if not ended:
                self.owner.record_hang()
                first = self.owner.full_deadline()
                self.hung(seconds, self.owner.name, self.owner.deadline(), first=first if first > seconds else None)
            self.fail(
                f"{self.function}() on {self.where} ended the process running {self.owner.shown_as}: {ended}. "
                f"It had made {len(self.journal)} request(s). Your code runs in a process of its own; whatever "
                "ends that process fails the test it was running, and the next test starts a fresh one.",
                exchange=self.journal.last,
            )
        return self._outcome(reply)

    def _argument(self, argument: Any) -> dict[str, Any]:
        if argument is self.client:
            return {"kind": "client"}
        if argument is self.run:
            return {"kind": "run", "tools": self._tools() if self.probe is None else None}
        if argument is self.request:
            return {"kind": "request", "value": to_data(self.request)}
        if isinstance(argument, StreamHandle):
            return {"kind": "stream", "value": to_data(self.request)}
        return {"kind": "value", "value": to_data(argument)}

    def _believe(self, notes: list[dict[str, Any]]) -> None:
        """Keep what the learner's client says it encoded: shown in transcripts, and read for what the
        wire does not carry (a result the learner marked as an error). Verdicts on the conversation
        itself read what the sandbox parsed from the bytes it received."""
        for note in notes:
            if isinstance(note, dict) and isinstance(note.get("digest"), str):
                self.sent.note(note["digest"], note.get("messages"))

    def _tools(self) -> dict[str, Any]:
        """What a synchronous `run` answers, for the worker to answer itself: as `output()` does, with no
        round trip to the grader (nothing is judged on when a synchronous tool ran)."""
        return {
            "outputs": dict(self.scenario.tool_outputs),
            "failing": self.failing,
            "unknown": sorted(self.unknown_tools),
        }

    def _outcome(self, reply: dict[str, Any]) -> Outcome:
        __tracebackhide__ = True
        if isinstance(reply.get("sent"), list):
            self._believe(reply["sent"])
        if isinstance(reply.get("messages"), list):
            self.request.messages = [read_value(message) for message in reply["messages"]]
        self.stream_finished = reply.get("stream_finished") is True
        if "error" not in reply:
            outcome = Outcome(value=read_value(reply.get("value")))
            self.check_awaited(outcome, reply)
            return outcome
        error = error_from_data(reply["error"])
        self.check_awaited(Outcome(error=error), reply)
        if error.flags.get("not_implemented"):
            raise NotStarted(self.owner.not_started(self.function), pytrace=False)
        if error.flags.get("off_limits"):
            pytest.fail(str(error), pytrace=False)
        chain: BaseException | None = error
        while isinstance(chain, RemoteError):
            if chain.flags.get("tool"):
                self.tool_errors.append(chain)
            chain = chain.__cause__ or chain.__context__
        return Outcome(error=error)

    def first_response(self) -> Response:
        """The model's first turn, fetched by the grader (challenge 01 starts from it)."""
        assert isinstance(self.client, RecordingClient)
        return self.client.complete(self.request)

    def stream_for(self) -> StreamHandle:
        """A stream of the model's first turn, for the learner's collect_stream: opened in the worker."""
        return StreamHandle(self)

    def stream_reference(self) -> Response | None:
        """The turn the learner's stream carried, decoded here from the bytes the sandbox sent; None if the
        learner's code did not read it to the end."""
        if not self.stream_finished:
            return None
        exchange = next((ex for ex in self.journal if ex.is_stream and ex.status == 200), None)
        return reference_turn(self.provider, exchange.chunks) if exchange is not None else None

    # -- verdicts -----------------------------------------------------------------------------------

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

    def expect_provider_error_raised(self, outcome: Outcome) -> BaseException:
        """Challenge 07: the provider refused a request (`refuse=N`); the loop let its error through,
        rather than swallowing it and resending, or returning an earlier response."""
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
        refusal = f"{self.provider} 400: {refusal_text(self.provider)}"
        more = self.refusing.refused - 1 + len(self.journal) - (at - 1)
        if outcome.error is None or more > 0:
            went_on = f"sent {more} more request(s), then " if more > 0 else ""
            ended = (
                f"raised {type(outcome.error).__name__}"
                if outcome.error is not None
                else (f"returned {short(outcome.value)}")
            )
            Feedback(
                f"{self.function}() on {self.where}: the provider refused request {at}, and {self.function}() "
                f"{went_on}{ended}. A provider's error is not a tool's: it means the request itself was refused, "
                "so it must reach the caller, not be caught like a failing tool.",
                provider=refusal,
                lesson=PROVIDER_FAILED,
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
        differences = _differences(response, reference)
        if differences:
            reasoning = any(line.startswith(("reasoning", "order of parts")) for line in differences)
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
            self.fail(
                f"{self.function}() ran the calls of turn {number} one at a time: run({describe_call(call)}) "
                f"waited {self.probe.wait:g} s for the turn's other calls to start, and none did.",
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


def _differences(mine: Response, reference: Response) -> list[str]:
    found = []
    if mine.message.role != "assistant":
        found.append(f"role: {mine.message.role!r}, expected 'assistant'")
    if mine.text() != reference.text():
        found.append(f"text: {quote(mine.text())}, expected {quote(reference.text())}")
    want = [(call.id, call.name, dict(call.arguments)) for call in reference.tool_calls()]
    calls = mine.tool_calls()
    if not all(isinstance(call, ToolCall) for call in calls):
        found.append("tool calls: build each one as skyl.ToolCall(id, name, arguments)")
    elif not all(isinstance(call.arguments, Mapping) for call in calls):
        found.append("tool calls: arguments must be a dict: parse the joined JSON fragments with json.loads")
    else:
        got = [(call.id, call.name, dict(call.arguments)) for call in calls]
        if got != want:
            found.append(
                f"tool calls: [{', '.join(describe_call(call) for call in calls)}], expected "
                f"[{', '.join(describe_call(call) for call in reference.tool_calls())}]"
            )
    found += _reasoning_differences(mine, reference)
    # What MessageEnd carries: copied from the stream, never guessed from the calls.
    for name in ("stop_reason", "usage", "model", "id"):
        mine_value, carried = getattr(mine, name, None), getattr(reference, name)
        if mine_value != carried:
            found.append(f"{name}: {mine_value!r}, expected {carried!r} (from MessageEnd)")
    return found


def _reasoning_differences(mine: Response, reference: Response) -> list[str]:
    """A reasoning model's turn: the same reasoning parts, unchanged, before the calls they led to."""
    want = [part.data() for part in reference.message.reasoning()]
    got = [part.data() for part in mine.message.reasoning()]
    if got != want:
        return [
            f"reasoning: {len(got)} part(s), expected the {len(want)} the stream carried, unchanged "
            "(each ReasoningEnd's event.reasoning)"
        ]
    order = [part.kind for part in mine.message.content if part.kind != "text"]
    expected = [part.kind for part in reference.message.content if part.kind != "text"]
    if got and order != expected:
        return [f"order of parts: {', '.join(order)}; expected {', '.join(expected)}: reasoning first, as it arrived"]
    return []
