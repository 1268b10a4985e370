"""A grading conversation: one scenario on one wire format, with the learner's code in the middle.

A `Dialogue` hands the learner a client wired to the in-process sandbox, a fresh request and a
`run` function, then judges what reached the provider (the transport's journal), how many requests
were made, and the types returned. Every `expect_*` method either returns or fails the test with
feedback that teaches (`_expectations.Expectations`, over `_verdicts.Verdicts`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal

import httpx
import pytest

from ...adapters import _transport
from ...engine import _catalogue
from ...engine._engine import Exchange
from ...engine._scenario import Call, Scenario
from ...engine.faults import Fault
from ...messages._types import Request, Response, ToolCall, user_text
from ..boundary._marshal import (
    TOOL_ERRORS,
    RemoteError,
    UnreadableValue,
    error_from_data,
    from_data,
    read_value,
    to_data,
)
from ..boundary._runner import Outcome, TimedOut, WorkerDied, show_output
from ._checks import EXPECT_ERROR
from ._clients import Known, RecordingAsyncClient, RecordingClient, Sent, StreamHandle, reference_turn
from ._expectations import Expectations
from ._feedback import NotStarted
from ._owner import LearnerFunction, Owner
from ._probe import ConcurrencyProbe
from ._refusal import RefusingTransport
from ._retries import Retries

__all__ = ["BUDGET", "Dialogue"]

BUDGET = 20
"""Model requests per dialogue: a runaway loop fails its own test after this many."""

TAKEN_AWAY = {"collect_stream": False}
"""Parts of skyl a challenge takes away from the learner's code (`take_away_collect_stream`)."""


def call_key(call: ToolCall) -> str:
    """`get_weather(city='Paris')`: how a scenario's `tool_outputs` name a call."""
    return repr(Call(call.name, dict(call.arguments)))


class Dialogue(Retries, Expectations):
    """One scenario on one provider. Build it with `challenge.dialogue(...)`."""

    def __init__(
        self,
        owner: Owner,
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
    ) -> None:
        self.owner = owner
        self.mode = mode
        self.stream_finished = False
        """Whether the learner's code read the stream of `stream_for()` to its end."""
        self.scenario = scenario if isinstance(scenario, Scenario) else _catalogue.get_scenario(scenario)
        self.provider = provider
        self.transport = _transport.transport(self.scenario, budget=BUDGET, faults=list(faults), echo="strict")
        self.faults = tuple(faults)
        """Scripted faults (challenge 10): then every tool run comes to the grader, which counts them."""
        self.runs: list[str] = []
        """The calls `run` ran, in order (`call_key`), when the grader answers them (`faults=`, async)."""
        self.refusing: RefusingTransport | None = None
        """With `refuse=N`, the provider refuses request N and every later one with `refuse_status`
        (400: as too long; `_refusal`)."""
        if refuse is not None:
            self.transport = self.refusing = RefusingTransport(
                self.transport, provider, refuse, status=refuse_status, model=self.scenario.name
            )
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
        """Calls (`get_weather(city='Pariss')`) whose `run` raises `raises` with this message."""
        if raises not in TOOL_ERRORS:
            raise ValueError(f"raises={raises!r}: a failing tool raises one of {sorted(TOOL_ERRORS)}")
        self.raises = raises
        """The class a failing tool raises, by name (`TOOL_ERRORS`): tools fail in their own ways."""
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
            error = (
                KeyError(call.name) if call.name in self.unknown_tools else TOOL_ERRORS[self.raises](self.failing[key])
            )
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

    def model(self, method: str, path: str, body: bytes, query: str) -> tuple[int, Mapping[str, str], bytes] | Exchange:
        """One model request from the learner's client: answered by this dialogue's transport (the sandbox,
        or a provider refusing it), journaled there."""
        if self.refusing is not None:
            url = f"http://sandbox{path}" + (f"?{query}" if query else "")
            response = self.refusing.handle_request(httpx.Request(method, url, content=body))
            return response.status_code, dict(response.headers), response.read()
        exchange = self.transport.engine.handle(method, path, body, query=query)
        self.journal.append(exchange)
        return exchange

    async def tool(self, payload: Any) -> dict[str, Any]:
        """One `run(call)` from the learner's code: the output, or the error the tool raises."""
        try:
            call = from_data(payload.get("call") if isinstance(payload, dict) else None)
        except (UnreadableValue, RecursionError):
            call = None
        if not isinstance(call, ToolCall):
            return {"error": {"type": "TypeError", "args": ["run() takes a skyl.ToolCall from resp.tool_calls()"]}}
        self.runs.append(call_key(call))
        try:
            output = await self.probe.run(call) if self.probe is not None else self.output(call)
        except tuple(TOOL_ERRORS.values()) as error:  # KeyError for an unknown tool, `raises` for a failing one
            return {"error": {"type": type(error).__name__, "args": [str(arg) for arg in error.args]}}
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
            "socket": self.owner.endpoint.worker_socket,
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
                self.owner.record_hang(f"{self.function}() did not finish within {seconds:g} s")
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
            answered_here = self.probe is None and not self.faults  # faults: the grader counts every run
            return {"kind": "run", "tools": self._tools() if answered_here else None}
        if argument is self.request:
            return {"kind": "request", "value": to_data(self.request)}
        if isinstance(argument, StreamHandle):
            return {"kind": "stream", "value": to_data(self.request)}
        return {"kind": "value", "value": to_data(argument)}

    def _believe(self, notes: list[dict[str, Any]], known: Known) -> None:
        """Keep what the learner's client says it encoded: shown in transcripts, and read for what the
        wire does not carry (a result the learner marked as an error). Verdicts on the conversation
        itself read what the sandbox parsed from the bytes it received."""
        for note in notes:
            if isinstance(note, dict) and isinstance(note.get("digest"), str):
                self.sent.note(note["digest"], note.get("messages"), known)

    def _tools(self) -> dict[str, Any]:
        """What a synchronous `run` answers, for the worker to answer itself: as `output()` does, with no
        round trip to the grader (nothing is judged on when a synchronous tool ran)."""
        return {
            "outputs": dict(self.scenario.tool_outputs),
            "failing": self.failing,
            "raises": self.raises,
            "unknown": sorted(self.unknown_tools),
        }

    def _outcome(self, reply: dict[str, Any]) -> Outcome:
        __tracebackhide__ = True
        known = Known(reply.get("known"))
        if isinstance(reply.get("sent"), list):
            self._believe(reply["sent"], known)
        messages = known.messages(reply.get("messages"))
        if messages is not None:
            self.request.messages = list(messages)
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
