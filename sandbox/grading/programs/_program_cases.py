"""Which challenges a program in any language is graded on, and what each case checks.

A program is the whole loop, run once per case, so the challenges map onto it like this:

    01_apply_tool_results  the program's first round: the turn, then one result per call in call order,
                           and an error result for a call whose tool is unknown (the function's
                           "missing result"); scenarios that end after one round
    02_bounded_loop        finishes legitimate tasks; at a runaway, exits non-zero after 5 requests
    03_several_calls       several calls per turn, over several rounds (and still bounded)
    04_report_runaway      the report on stderr names the bound, the calls in order, what to check
    05_streaming           SANDBOX_STREAM=1: every request streams, the turn is rebuilt from events
                           (a call without arguments included: Anthropic streams it as one empty fragment;
                           and arguments holding true and false, which only a JSON parser reads)
    06_detect_the_end      ends on the empty call list, whatever the stop reason says (and still bounded)
    07_failing_tools       a tool run answering {"error": ...} (a failing or unknown tool) becomes an
                           error result;
                           a request the provider refuses ends the program (non-zero), never resent
    08_async               the calls of a turn run concurrently: the sandbox sees them overlap
    09_keep_the_whole_turn SANDBOX_REASONING=1, a reasoning model: each turn goes back whole (its
                           reasoning items, thinking blocks or thought signatures), streamed or not
    10_retry_without_repeating  the provider fails as scripted (429, 529/503, a cut answer, a 400):
                           each retryable fault retried after its hint (40 ms to 500 ms, each different),
                           at most 3 attempts, the same request again (nothing appended twice, no tool
                           run twice, even when a stream breaks after a call's arguments ended, nothing
                           kept of a cut answer); a failing tool an error result, as in 07; a 400, 401,
                           403 or 404 never resent; giving up (on an overload, or a connection that
                           keeps breaking) is a non-zero exit whose stderr names the status, the
                           attempts ("3 attempts") and what to check

Each case runs on every wire format the grader is asked for. Beside the catalogue's scenarios, most
challenges grade generated ones, as their Python tests do (`_generated`: reproducible, `EXAMPLES` per
wire format): any tool names, 0 to 8 calls a turn, stop reasons that lie. A program that hard-codes the
catalogue's tools, or handles only a few calls a turn, fails there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...engine.faults import Fault
from ..judge._refusal import REFUSALS

__all__ = ["CASES", "Case", "program_title"]

Expect = Literal["answer", "gave_up", "report", "refused", "refused_once", "retried", "exhausted"]


@dataclass(frozen=True)
class Case:
    """One check of a program on one scenario (run once per wire format)."""

    test: str
    """What it checks, as a test name: `gives_up_at_the_bound`."""
    scenario: str
    expect: Expect
    """`answer`: prints the final answer, exits 0. `gave_up`: exits non-zero at the bound. `report`:
    gave up, and the report on stderr says what to look at. `refused`: stopped, non-zero, at the
    provider's refusal (`refused_once`: the same, judged by challenge 10's rule).
    `retried`: got through the case's `faults` to the answer. `exhausted`: the
    provider kept failing; retried, then gave up with a non-zero exit that says why."""
    stream: bool = False
    failing: Mapping[str, str] = field(default_factory=dict)
    """Calls whose tool run fails with this text."""
    unknown_tools: tuple[str, ...] = ()
    """Tools the desk does not know."""
    concurrent: bool = False
    """Check that each turn's calls were in flight together."""
    generated: Literal["", "tasks", "runaways"] = ""
    """Grade scenarios drawn by this strategy of `_generated` (with `options`) instead of `scenario`."""
    options: Mapping[str, Any] = field(default_factory=dict)
    refuse: int | None = None
    """The provider refuses this request and every later one (`expect` is then `refused` or `refused_once`)."""
    refuse_status: int = 400
    """The status it refuses with: 400 (too long), or 401, 403, 404 (`judge._refusal.REFUSALS`)."""
    reasoning: bool = False
    """SANDBOX_REASONING=1: the program asks the model to show its reasoning (challenge 09)."""
    faults: tuple[Fault, ...] = ()
    """The provider fails as scripted (challenge 10)."""


_ANY_TASK = {"rounds": (0, 3), "calls": (0, 8)}
_REASONING_TASK = {"rounds": (1, 3), "calls": (0, 5), "reasoning": True}
"""As the Python tests of 09 draw them: every turn reasoned (`Scenario.with_reasoning`)."""
_RATE_LIMIT_THEN_OVERLOAD = (
    Fault("rate_limit", request=2, retry_after=0.04),
    Fault("overloaded", request=3, retry_after=0.3),
    Fault("rate_limit", request=4, retry_after=0.1),
)
"""Three hints to wait, each different, as challenge 10's Python tests send them: a program that does not
wait, or waits a fixed time shorter than 300 ms, is refused again when a retry comes early."""
_503 = (Fault("server_error", request=1, status=503, retry_after=0.5),)
_CUT_FOREVER = (Fault("cut", request=2, times=10, after=1),)
_CALL_COMPLETE = {"openai": 16, "openai-responses": 19, "anthropic": 19}
"""Frames of request 2's stream after which its call is complete but the turn is not (Gemini streams a
call turn as one frame, so it has no such moment)."""
_CUT_AFTER_THE_CALL = tuple(
    Fault("cut", request=2, after=after, provider=provider) for provider, after in _CALL_COMPLETE.items()
)


def _cuts(stream: bool) -> tuple[Fault, ...]:
    """Request 2's answer cut in the middle: after 4 frames of a stream, or half of a JSON body. Gemini
    streams a call-only turn as one frame (which a cut breaks before any event arrives), so on Gemini the
    final answer, streamed in several, is cut too."""
    after = 4 if stream else 1
    return (Fault("cut", request=2, after=after), Fault("cut", request=4, after=after, provider="gemini"))


_PARISS = {"get_weather(city='Pariss')": "weather service: no such city 'Pariss'"}

CASES: dict[str, tuple[Case, ...]] = {
    "01_apply_tool_results": (
        Case("appends_the_turn_then_one_result_per_call", "single_call", "answer"),
        Case("appends_the_turn_then_one_result_per_call", "parallel_calls", "answer"),
        Case("a_call_without_a_result_gets_an_error_result", "parallel_calls", "answer", unknown_tools=("get_time",)),
    ),
    "02_bounded_loop": (
        Case("finishes_the_task_within_the_bound", "single_call", "answer"),
        Case("finishes_the_task_within_the_bound", "multi_step", "answer"),
        Case("gives_up_at_the_bound", "runaway", "gave_up"),
        Case("gives_up_at_the_bound", "six_rounds", "gave_up"),
        Case("any_runaway_is_stopped_at_the_bound", "generated", "gave_up", generated="runaways"),
    ),
    "03_several_calls": (
        Case("answers_every_call_of_every_turn_in_order", "parallel_calls", "answer"),
        Case("answers_every_call_of_every_turn_in_order", "parallel_rounds", "answer"),
        Case("answers_every_call_of_every_turn_in_order", "multi_step", "answer"),
        Case("gives_up_at_the_bound", "runaway", "gave_up"),
        Case("any_number_of_calls_in_any_turn", "generated", "answer", generated="tasks", options=_ANY_TASK),
    ),
    "04_report_runaway": (
        Case("the_report_names_the_bound_and_the_calls", "runaway", "report"),
        Case("the_report_names_the_bound_and_the_calls", "runaway_empty", "report"),
        Case("the_report_names_the_bound_and_the_calls", "six_rounds", "report"),
        Case("a_legitimate_task_still_finishes", "multi_step", "answer"),
        Case("any_runaway_is_reported", "generated", "report", generated="runaways"),
    ),
    "05_streaming": (
        Case("streams_every_turn", "plain_text", "answer", stream=True),
        Case("streams_every_turn", "single_call", "answer", stream=True),
        Case("streams_every_turn", "parallel_calls", "answer", stream=True),
        Case("streams_every_turn", "multi_step", "answer", stream=True),
        Case("streams_every_turn", "no_arguments", "answer", stream=True),
        Case("streams_every_turn", "json_arguments", "answer", stream=True),
        Case("is_still_bounded", "runaway", "gave_up", stream=True),
        Case("streams_any_task", "generated", "answer", stream=True, generated="tasks", options=_ANY_TASK),
    ),
    "06_detect_the_end": (
        Case("ends_when_the_call_list_is_empty", "stop_reason_mismatch", "answer"),
        Case("ends_when_the_call_list_is_empty", "plain_text", "answer"),
        Case("ends_when_the_call_list_is_empty", "single_call", "answer"),
        Case("gives_up_at_the_bound", "runaway", "gave_up"),
        Case(
            "ends_on_the_call_list_whatever_the_stop_reason",
            "generated",
            "answer",
            generated="tasks",
            options={**_ANY_TASK, "stop": True},
        ),
    ),
    "07_failing_tools": (
        Case("an_error_output_goes_back_and_the_model_recovers", "tool_error_recovery", "answer"),
        Case("a_failing_tool_becomes_an_error_result", "tool_error_recovery", "answer", failing=_PARISS),
        Case("an_unknown_tool_becomes_an_error_result", "parallel_calls", "answer", unknown_tools=("get_time",)),
        Case(
            "a_failing_call_without_arguments_becomes_an_error_result",
            "no_arguments",
            "answer",
            failing={"get_time()": "clock service unavailable"},
        ),
        Case("gives_up_at_the_bound", "runaway", "gave_up"),
        Case("a_refused_request_reaches_the_caller", "tool_error_recovery", "refused", failing=_PARISS, refuse=2),
    ),
    "08_async": (
        Case("runs_the_calls_of_a_turn_concurrently", "parallel_calls", "answer", concurrent=True),
        Case("runs_the_calls_of_a_turn_concurrently", "parallel_rounds", "answer", concurrent=True),
        Case("finishes_the_task", "single_call", "answer"),
        Case("finishes_the_task", "multi_step", "answer"),
        Case("gives_up_at_the_bound", "runaway", "gave_up"),
        Case(
            "any_task_runs_each_turn_concurrently",
            "generated",
            "answer",
            concurrent=True,
            generated="tasks",
            options=_ANY_TASK,
        ),
    ),
    "09_keep_the_whole_turn": (
        Case("keeps_the_whole_turn", "multi_step_reasoning", "answer", reasoning=True),
        Case("keeps_the_whole_turn_streamed", "multi_step_reasoning", "answer", stream=True, reasoning=True),
        Case("keeps_the_whole_turn_streamed", "parallel_calls_reasoning", "answer", stream=True, reasoning=True),
        Case("is_still_bounded", "runaway_reasoning", "gave_up", stream=True, reasoning=True),
        Case(
            "keeps_any_reasoning_task_whole",
            "generated",
            "answer",
            reasoning=True,
            generated="tasks",
            options=_REASONING_TASK,
        ),
        Case(
            "keeps_any_reasoning_task_whole_streamed",
            "generated",
            "answer",
            stream=True,
            reasoning=True,
            generated="tasks",
            options=_REASONING_TASK,
        ),
    ),
    "10_retry_without_repeating": (
        Case("retries_a_rate_limit_and_an_overload", "multi_step", "retried", faults=_RATE_LIMIT_THEN_OVERLOAD),
        Case(
            "retries_a_rate_limit_and_an_overload_streamed",
            "multi_step",
            "retried",
            stream=True,
            faults=_RATE_LIMIT_THEN_OVERLOAD,
        ),
        Case("retries_a_503", "single_call", "retried", faults=_503),
        Case("retries_a_503_streamed", "single_call", "retried", stream=True, faults=_503),
        Case("discards_an_answer_cut_before_its_end", "multi_step", "retried", faults=_cuts(False)),
        Case("discards_a_stream_cut_before_its_end", "multi_step", "retried", stream=True, faults=_cuts(True)),
        Case(
            "never_runs_a_tool_twice_when_a_stream_breaks_after_its_call",
            "multi_step",
            "retried",
            stream=True,
            faults=_CUT_AFTER_THE_CALL,
        ),
        Case(
            "a_failing_tool_still_gets_a_result",
            "tool_error_recovery",
            "retried",
            failing=_PARISS,
            faults=(Fault("rate_limit", request=2, retry_after=0.05),),
        ),
        Case("never_retries_a_400", "multi_step", "refused_once", refuse=2),
        *(
            Case(f"never_retries_a_{status}", "multi_step", "refused_once", refuse=2, refuse_status=status)
            for status in REFUSALS
        ),
        Case(
            "gives_up_with_an_error_that_says_why",
            "multi_step",
            "exhausted",
            faults=(Fault("overloaded", request=2, times=10, retry_after=0.01),),
        ),
        Case("gives_up_on_a_connection_that_keeps_breaking", "multi_step", "exhausted", faults=_CUT_FOREVER),
        Case("is_still_bounded", "runaway", "gave_up"),
    ),
}


_PROGRAM_TITLES = {"08_async": "Concurrent tool calls"}
"""Titles that name Python's way of doing it (hints.toml: "... with asyncio"), as a program reads them."""


def program_title(challenge: str, title: str) -> str:
    """The challenge's title for a program in any language."""
    return _PROGRAM_TITLES.get(challenge, title)
