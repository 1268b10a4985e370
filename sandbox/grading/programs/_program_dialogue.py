"""A graded case for a program in any language: one scenario on one wire format, the program run once
against a private sandbox, then judged on what reached that sandbox.

The verdicts are the Python dialogue's (`Verdicts`: transcripts, the provider's words, rules, hints),
read from the program's side of the contract (`_contract`): the answer is what it printed on stdout
with exit status 0, a bound it hit is a non-zero exit with its report on stderr, and its tools ran
through the sandbox, which saw their order and overlap.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ...adapters._transport import Journal
from ...engine._engine import Engine, Exchange
from ...engine._scenario import Scenario
from ...engine.faults import Fault
from ...messages._types import ToolCall
from ..boundary._endpoint import Endpoint
from ..boundary._program import ProgramRun, run_program
from ..judge._checks import EXPECT_ERROR, missing_from_report
from ..judge._clients import Sent
from ..judge._dialogue import BUDGET
from ..judge._feedback import Feedback
from ..judge._lessons import BOUND, END, REPORT, STREAM, Lesson
from ..judge._probe import ConcurrencyProbe
from ..judge._refusal import refusal, refusal_text, refused_means
from ..judge._transcript import describe_call, quote
from ..judge._verdicts import Verdicts
from ._contract import environment
from ._program_lessons import PROVIDER_STOPS, RUN_CONCURRENTLY, STREAM_EVERY_REQUEST, TOOL_FAILED_GOES_BACK
from ._program_retries import ProgramRetries
from ._sent import read_sent
from ._tooldesk import ToolDesk, scripted_key

__all__ = ["PROVIDER_STOPS", "ProgramDialogue"]

DESCRIBE_PATH = "/tools"
"""`GET` it for the scenario's tools; `POST /tools/run` runs one (`_endpoint.TOOLS_PATH`)."""
_SHOWN_LINES = 12
_GAVE_UP = re.compile(r"gave up|give up|giving up|rounds?\b|bound|limit|max", re.IGNORECASE)
"""Words of a report that a program wrote on purpose, rather than a crash's."""


class ProgramDialogue(ProgramRetries, Verdicts):
    """One case: build it, `run(command, seconds)`, then the `expect_*` verdicts."""

    def __init__(
        self,
        scenario: Scenario,
        provider: str,
        *,
        stream: bool = False,
        failing: Mapping[str, str] | None = None,
        unknown_tools: Collection[str] = (),
        concurrency_wait: float | None = None,
        refuse: int | None = None,
        refuse_status: int = 400,
        reasoning: bool = False,
        faults: Sequence[Fault] = (),
    ) -> None:
        self.scenario = scenario
        self.reasoning = reasoning
        """SANDBOX_REASONING=1: the program is asked to request the model's reasoning (challenge 09)."""
        self.provider = provider
        self.stream = stream
        self.failing = dict(failing or {})
        self.unknown_tools = set(unknown_tools)
        self.budget = BUDGET
        self.journal = Journal(None)
        self.engine = Engine(scenario, budget=BUDGET, faults=list(faults), echo="strict")
        """With `faults`, the provider fails as scripted (challenge 10); the endpoint delivers cuts and waits."""
        self.desk = ToolDesk(scenario, self.journal, failing=self.failing, unknown_tools=self.unknown_tools)
        self.probe = ConcurrencyProbe(self.journal, _no_output, wait=concurrency_wait) if concurrency_wait else None
        """With a `concurrency_wait`, each tool run waits that long for its turn's other calls (challenge 08)."""
        self.refuse = refuse
        """With `refuse=N`, the provider refuses request N and every later one with `refuse_status` (400:
        as too long; `_refusal`); refusals are not journaled: the journal holds what the provider accepted."""
        self.refuse_status = refuse_status
        self.requests = 0
        self.refused = 0
        self.sent = Sent()
        self.function = "your program"
        self.source = Path(".")
        self.access = ""
        """Why the user the program runs as cannot reach its files (`_access.unreachable`), when it cannot."""

    @property
    def actor(self) -> str:
        return "your program"

    def run(self, command: Sequence[str], seconds: float, endpoint: Endpoint, **how: Any) -> ProgramRun:
        """Open this case's door on the grader's endpoint (a secret base URL of its own), run the program
        against it once (`run_program`, with `how`: cwd, isolation, relay), close the door, read what it sent."""
        base = endpoint.open(self)
        try:
            env = {key: value for key, value in os.environ.items() if key != "GOOGLE_API_KEY"}
            env.update(
                environment(
                    self.provider,
                    base,
                    model=self.scenario.name,
                    prompt=self.scenario.prompt,
                    stream=self.stream,
                    reasoning=self.reasoning,
                )
            )
            result = run_program(command, env, seconds, **how)
        finally:
            endpoint.close_door(base)
        self.sent = read_sent(list(self.journal))
        return result

    # -- the door the endpoint serves (on its event loop) -------------------------------------------

    def model(self, method: str, path: str, body: bytes, query: str) -> tuple[int, Mapping[str, str], bytes] | Exchange:
        """One request. `GET /tools` describes the tools. A model request is refused as too long from
        request `refuse` on, otherwise answered by the engine and journaled."""
        if method == "GET" and path == DESCRIBE_PATH:
            return 200, {"content-type": "application/json"}, json.dumps(self.desk.describe()).encode()
        self.requests += 1
        if self.refuse is not None and self.requests >= self.refuse:
            self.refused += 1
            error = refusal(self.provider, self.refuse_status, self.scenario.name)
            return error.status, {"content-type": "application/json", **error.headers}, error.body
        exchange = self.engine.handle(method, path, body, query=query)
        self.journal.append(exchange)
        return exchange

    async def tool(self, payload: Any) -> dict[str, Any]:
        """One tool run: `{"name": ..., "arguments": {...}}` in, `{"output": ...}` or `{"error": ...}` out.
        For challenge 08 a call the model asked for first waits for its turn's other calls (the probe)."""
        name = payload.get("name") if isinstance(payload, dict) else None
        arguments = payload.get("arguments", {}) if isinstance(payload, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return {"error": 'a tool run is {"name": "<the call\'s name>", "arguments": {<the call\'s arguments>}}'}
        reply = self.desk.run(name, arguments)
        if self.probe is not None and reply.failure in ("", "raised"):
            await self.probe.run(ToolCall(f"run {len(self.desk.runs)}", name, dict(arguments)))
        return reply.as_json()

    def expected(self, call: ToolCall) -> object:
        key = scripted_key(self.scenario, call.name, call.arguments)
        if call.name in self.unknown_tools or key in self.failing:
            return EXPECT_ERROR
        return self.scenario.tool_outputs.get(key) if key is not None else None

    # -- verdicts -----------------------------------------------------------------------------------

    def expect_answer(self, run: ProgramRun, *, bound: int = 5) -> None:
        """The program printed the model's final answer and exited 0; every request before it was right."""
        self._check_ran(run)
        self.check_progress()
        self.check_rejections()
        last = self.journal.last
        if last is None or last.turn is None:
            self._silent(run)
        if run.returncode != 0:
            self.fail(
                f"{self.actor} on {self.where} ended with {run.exit_description} after {len(self.journal)} "
                "request(s), instead of printing the model's final answer and exiting 0.",
                details=_stderr(run),
                exchange=last,
                lesson=self._lesson_for_exit(run),
            )
        asked = last.turn.message.tool_calls()
        if asked:
            calls = ", ".join(describe_call(call, with_id=False) for call in asked)
            if last.is_stream:
                why = "the calls were lost on the way (a turn rebuilt from its events without them), and"
            else:
                said = last.turn.raw_stop_reason or last.turn.stop_reason.value
                why = (
                    f"the turn's stop reason said {said!r} and the loop took that for the end: those calls never "
                    "ran, and"
                )
            self.fail(
                f"{self.actor} exited 0 after request {len(self.journal)}, but the model's last turn asked for "
                f"{calls}: {why} the loop stopped before the model was done.",
                exchange=last,
                lesson=STREAM if last.is_stream else END,
            )
        answer = last.turn.message.text()
        if run.stdout.strip() != answer.strip():
            printed = run.stdout.strip()
            rebuilt = last.is_stream and bool(printed) and printed in answer
            self.fail(
                f"{self.actor} printed {quote(printed)} on stdout, but the model's final answer is "
                f"{quote(answer)}. "
                + (
                    "That is only part of the answer the stream carried: join every text fragment of the turn."
                    if rebuilt
                    else "Print the text of the last response (the one without tool calls) and nothing else on "
                    "stdout; write anything else to stderr."
                ),
                exchange=last,
                lesson=STREAM if rebuilt else None,
            )
        if len(self.journal) > bound:
            self.fail(f"{self.actor} made {len(self.journal)} requests; at most {bound} are allowed.", lesson=BOUND)
        self.check_order(last)

    def expect_gave_up(self, run: ProgramRun, *, bound: int = 5) -> str:
        """The program exited non-zero once the bound was hit, after exactly `bound` requests. Returns
        what it wrote on stderr: its report."""
        self._check_ran(run)
        self.check_progress()
        self.check_rejections()
        made = len(self.journal)
        if made > bound:
            self.fail(
                f"{self.actor} on {self.where} made {made} requests before exiting; the bound is {bound}. "
                "A legitimate task may need more rounds, but the loop must still give up at the bound.",
                lesson=BOUND,
            )
        if made == 0:
            self._silent(run)
        if run.returncode == 0:
            self.fail(
                f"{self.actor} exited 0 after {made} request(s), printing {quote(run.stdout.strip())}, but the "
                "model was still asking for tools. When the bound is hit, exit with a non-zero status and "
                "say why on stderr, so the caller knows the loop gave up.",
                exchange=self.journal.last,
                lesson=BOUND,
            )
        if made < bound:
            self.fail(
                f"{self.actor} ended with {run.exit_description} after only {made} request(s), while the "
                f"model was still working. A legitimate task can take several rounds: give up after {bound} "
                "requests, not fewer.",
                details=_stderr(run),
                exchange=self.journal.last,
                lesson=self._lesson_for_early_exit(run, made),
            )
        last = self.journal.last
        assert last is not None
        self.check_order(last)
        return run.stderr

    def expect_provider_error_reported(self, run: ProgramRun, *, lesson: Lesson = PROVIDER_STOPS) -> None:
        """Challenges 07 and 10: the provider refused a request (`refuse=N`); the program stopped there with
        a non-zero exit, rather than resending it or printing an earlier turn as the answer. `lesson`: the
        rule of the challenge being graded."""
        assert self.refuse is not None, "expect_provider_error_reported() needs a case with refuse=N"
        self._check_ran(run)
        self.check_progress()
        self.check_rejections()
        at = self.refuse
        if not self.refused:
            self.fail(
                f"{self.actor} on {self.where} made {len(self.journal)} request(s), then ended with "
                f"{run.exit_description}; it should reach request {at}.",
                details=_stderr(run),
                exchange=self.journal.last,
            )
        more = self.refused - 1
        if run.returncode == 0 or more > 0:
            went_on = f"sent {more} more request(s), then " if more > 0 else ""
            ended = f"ended with {run.exit_description}" if run.returncode else f"printed {quote(run.stdout.strip())}"
            status = self.refuse_status
            Feedback(
                f"{self.actor} on {self.where}: the provider refused request {at} with a {status}, and {self.actor} "
                f"{went_on}{ended}. "
                + refused_means(lesson, status, "end the program (a non-zero exit, the error on stderr)"),
                provider=f"{self.provider} {status}: {refusal_text(self.provider, status, self.scenario.name)}",
                lesson=lesson,
            ).fail()

    def expect_runaway_report(self, report: str) -> None:
        """The report on stderr names the bound, the calls in order, and says to check what the tools return."""
        turns = [[call.name for call in ex.turn.message.tool_calls()] for ex in self.journal if ex.turn]
        sequences = [[name for turn in turns for name in turn], [name for turn in turns[:-1] for name in turn]]
        tools = {tool.name for tool in self.scenario.tools}
        missing = missing_from_report(report, len(self.journal), sequences, tools)
        if missing:
            shown = report.strip().splitlines()[-_SHOWN_LINES:] or ["(nothing)"]
            self.fail(
                f"{self.actor} gave up on {self.where}, but its report on stderr does not say enough to debug "
                "the runaway. It wrote:\n" + "\n".join(f"    {line}" for line in shown) + "\nIt should also name:",
                details=[f"- {item}" for item in missing],
                lesson=REPORT,
            )

    def expect_streamed(self) -> None:
        """Every request asked for a stream."""
        for number, exchange in enumerate(self.journal, 1):
            if exchange.conversation is not None and not exchange.conversation.stream:
                self.fail(
                    f"{self.actor} sent request {number} without streaming, though SANDBOX_STREAM=1 asks for "
                    "every request to stream.",
                    lesson=STREAM_EVERY_REQUEST,
                )

    def expect_concurrent(self) -> None:
        """The calls of each turn were all in flight at once (the probe waited to see them)."""
        if self.probe is not None and self.probe.one_at_a_time is not None:
            number, call = self.probe.one_at_a_time
            most, _ = self.probe.at_once()
            self.fail(
                f"{self.actor} ran the calls of turn {number} {self.probe.how_they_ran()}: the run of "
                f"{describe_call(call, with_id=False)} waited {self.probe.wait:g} s for "
                f"the turn's other calls to start, and {'none' if most <= 1 else f'only {most - 1}'} did.",
                lesson=RUN_CONCURRENTLY,
            )

    # -- how a run can go wrong before any verdict --------------------------------------------------

    def _check_ran(self, run: ProgramRun) -> None:
        if run.not_started:
            self.fail(
                f"The program could not be started: {run.not_started}. "
                + (
                    self.access
                    or "Check the command after `--` (build it first; a relative path is relative to where you run "
                    "sandbox grade)."
                )
            )
        if run.timed_out:
            self.check_rejections()  # a budget the sandbox enforced explains a hang that followed it
            self.fail(
                f"{self.actor} on {self.where} did not exit within {run.seconds:.0f} s, so the grader killed it "
                f"(its whole process group). It had made {len(self.journal)} request(s) and run "
                f"{len(self.desk.runs)} tool call(s). Look for a request or tool call that waits forever, or a "
                "loop that neither asks the model again nor ends.",
                details=_stderr(run),
                exchange=self.journal.last,
            )

    def _silent(self, run: ProgramRun) -> NoReturn:
        self.fail(
            f"{self.actor} ended with {run.exit_description} without asking the model anything. It should "
            f"send SANDBOX_PROMPT to the model SANDBOX_MODEL at SANDBOX_BASE_URL, in the SANDBOX_WIRE format "
            f"({self.provider}). If it does not speak {self.provider}, leave it out: `--wire` lists the formats "
            "to grade.",
            details=[*_stderr(run), *([self.access] if self.access else [])],
        )

    def _lesson_for_early_exit(self, run: ProgramRun, made: int) -> Lesson:
        """Why a program stopped before the bound on a runaway: a tool of that turn failed, it could not
        rebuild the turn it streamed (its stderr does not read as a report), or its bound is too low."""
        last = self.journal.last
        if self.desk.failed_in_turn(made):
            return TOOL_FAILED_GOES_BACK
        if last is not None and last.is_stream and not _GAVE_UP.search(run.stderr):
            return STREAM
        return BOUND

    def _lesson_for_exit(self, run: ProgramRun) -> Lesson | None:
        """Why a program stopped while the model was still working: a tool of that turn failed, or
        (when its stderr reads as a report) it set its bound too low."""
        last = self.journal.last
        if last is None or last.turn is None or not last.turn.message.tool_calls():
            return None
        if self.desk.failed_in_turn(len(self.journal)):
            return TOOL_FAILED_GOES_BACK
        if last.is_stream and not _GAVE_UP.search(run.stderr):
            return STREAM  # it could not rebuild the turn it streamed (arguments that do not parse, ...)
        if not _GAVE_UP.search(run.stderr):
            return None
        if any(step.repeat != "once" for step in self.scenario.steps):
            return BOUND
        needed = len(self.scenario.steps)
        return Lesson(
            BOUND.rule,
            f"The loop gave up after {len(self.journal)} request(s) while the model was still working: "
            f"{self.where} needs {needed} ({needed - 1} rounds of tool calls, then the answer). "
            "Legitimate tasks rarely need more than three rounds: bound the loop at 5, not fewer.",
        )


def _stderr(run: ProgramRun) -> list[str]:
    lines = run.stderr.rstrip().splitlines()
    if not lines:
        return ["Its stderr was empty."]
    shown = lines[-_SHOWN_LINES:]
    cut = f" (last {len(shown)} of {len(lines)} lines)" if len(shown) < len(lines) else ""
    return [f"Its stderr{cut}:", *(f"    {line}" for line in shown)]


def _no_output(call: ToolCall) -> str:
    """The probe's output function: only its waiting is used here; the desk answers the call."""
    return ""
