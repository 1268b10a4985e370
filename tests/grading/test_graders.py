"""Prove the graders: every known-wrong loop fails for the right reason, every correct one passes.

    tests/mutants/<mutant>/<challenge>.py    one mistake; MUTANTS says which tests must fail, and what
                                             each failure must say (the lesson rule it broke)
    tests/variants/<variant>/<challenge>.py  correct, written differently; every test must pass

Each implementation is graded the way an instructor would: `pytest challenges/<challenge> --impl DIR`,
one in-process pytest session per directory (cached, so a mutant's expectations share one run). A
mutant marked `isolate=True` runs in a subprocess, exactly as a learner's run would, because it
upsets the process it runs in. Stubs must report "not started" and solutions must pass, too.

An expectation the harness does not meet yet carries `gap=`: it is an xfail (strict, unless the
gap is a flaky catch), so the suite stays green while the gap is open and fails once it is closed,
to have the marker removed. The assertion itself is never weakened.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHALLENGES = ROOT / "challenges"
MUTANTS_DIR = ROOT / "tests" / "mutants"
VARIANTS_DIR = ROOT / "tests" / "variants"
SOLUTIONS = ROOT / "solutions"
FOLDERS = sorted(path.name for path in CHALLENGES.iterdir() if re.match(r"^\d\d_\w+$", path.name) and path.is_dir())


@dataclass(frozen=True)
class Caught:
    """Every test whose name matches one of `tests` fails, and its failure matches the regex `says`.

    Patterns match the test name with its parameters (`test_x[runaway-openai]`); `*` is the only
    wildcard. `says` is searched case-insensitively in the failure text with whitespace collapsed,
    so a wrapped hint still matches.
    """

    tests: tuple[str, ...]
    says: str
    gap: str = ""
    """Why the harness does not meet this yet: what it printed, and what it should say."""
    flaky: bool = False
    """The gap is a catch that depends on scheduling: xfail without strict."""


@dataclass(frozen=True)
class Mutant:
    caught: tuple[Caught, ...]
    isolate: bool = False
    """Grade it in a subprocess: it leaves something behind that would fail the process grading it."""
    unclean_gap: str = ""
    """Why grading it does not end in a clean failure yet: it passes, or the session crashes or warns."""


def caught(*tests: str, says: str, gap: str = "", flaky: bool = False) -> Caught:
    return Caught(tests, says, gap, flaky)


TURN_FIRST = r"Append resp\.message before any tool result"
TURN_ONCE = r"Append the assistant turn once|once per turn"
ONE_PER_CALL = r"one tool message per call"
OWN_ID = r"carries its own call id"
ONE_RESULT = r"Each call gets exactly one result, carrying that call's own id"
NOT_SKIPPED = r"append an error result rather than skipping it"
OWN_OUTPUT = r"not in call order|each result must carry its own call's output"
UNMARKED = r"does not say so: mark it is_error=True or word it as an error"
BOUND = r"with a hard bound of 5 rounds \(5 model requests\)"
RUNAWAY = r"never stopped: the sandbox's budget of \d+ requests ended it\..*" + BOUND
SHOULD_RAISE = r"When the bound is hit the loop should raise an exception"
CALL_LIST = r"prefer the call list over the stop reason"
TOOL_FAILED = r"the failure becomes an error result"
STREAM = r"rebuild the turn from the events you saw"
FRAGMENTS = r"keyed by event\.index\. Join each call's fragments and parse them once"
SEQUENCE = r"It should also name: .*- the call sequence, in order"
NAMES_BOUND = r"It should also name: .*- the bound it hit: 5"
ADVICE = r"It should also name: .*- what to look at"
PROVIDER_REFUSED = r"the provider refused request 2 with a 400, and complete\(\) sent \d more request\(s\), then .*" + (
    r"Catch the tool's failure, not the provider's"
)
SHARED_KEY = r"Two calls of get_\w+ share the key 'get_\w+', so the second overwrote the first"
SWAPPED = r"Nothing was lost: the outputs of .* are swapped"
FROM_MESSAGE_END = (
    r"rebuilt a different turn .*- usage: Usage\(input_tokens=0, output_tokens=0\), expected .*\(from MessageEnd\)"
)
COLLECT = "test_collect_stream_rebuilds_the_turn"
WHOLE = r"a reasoning model's turn goes back whole, its reasoning before its calls"
WHOLE_STREAM = r"A streamed turn goes back whole: rebuild every part the stream announced, reasoning included"
KEEPS = "test_complete_keeps_the_whole_turn"
REASONING_PROVIDERS = ("openai-responses", "anthropic", "gemini")
REPORT = "test_the_error_names_the_bound_and_the_calls[*]"
RETRY = r"Retry a 429, 529 or 503 \(and a connection that broke\) after the provider's hint"
NO_REPEAT = r"A retry sends the same conversation again"
GIVE_UP = r"Give up after a few attempts, with an error that names the status"
FAULTED = ("test_retries_a_rate_limit_and_an_overload[*]", "test_retries_a_503[*]")
CUT = "test_discards_an_answer_cut_before_its_end"
GIVES_UP = "test_gives_up_with_an_error_that_says_why[*]"
ASYNC_PLAIN = (
    "test_runs_the_calls_of_a_turn_concurrently[*]",
    "test_finishes_the_task[*]",
    "test_raises_once_the_bound_is_hit[*]",
    "test_any_task_runs_each_turn_concurrently[*]",
)
"""08's tests where every tool answers and the provider refuses nothing: one mistake shows in each."""

MUTANTS: dict[str, Mutant] = {
    # 01: apply_tool_results(req, resp, results)
    "01_assistant_text": Mutant(
        (caught("*", says=TURN_FIRST + r".*assistant_text\(resp\.text\(\)\) keeps the prose"),)
    ),
    "01_turn_per_call": Mutant(
        (caught("*[parallel_calls-*]", "test_results_follow_the_calls_not_the_dict[*]", says=TURN_ONCE),)
    ),
    "01_results_first": Mutant((caught("*", says=TURN_FIRST),)),
    "01_turn_twice": Mutant((caught("*", says=TURN_ONCE),)),
    "01_skip_missing": Mutant((caught("test_a_call_without_a_result_gets_an_error_result[*]", says=NOT_SKIPPED),)),
    "01_missing_raises": Mutant(
        (
            caught(
                "test_a_call_without_a_result_gets_an_error_result[*]",
                says=r"raised KeyError.*gets an error result, never a crash",
            ),
        )
    ),
    "01_missing_empty": Mutant((caught("test_a_call_without_a_result_gets_an_error_result[*]", says=UNMARKED),)),
    "01_missing_none": Mutant((caught("test_a_call_without_a_result_gets_an_error_result[*]", says=UNMARKED),)),
    "01_results_from_dict": Mutant(
        (
            caught("test_results_follow_the_calls_not_the_dict[*]", says=OWN_OUTPUT),
            caught("test_a_call_without_a_result_gets_an_error_result[*]", says=NOT_SKIPPED),
            caught("test_results_for_ids_never_called_are_left_out[*]", says=OWN_ID),
        )
    ),
    "01_empty_as_missing": Mutant(
        (
            caught(
                "test_an_empty_output_is_a_result_like_any_other[*]",
                says=r"but results held \"\" for that call.*An empty output is still the tool's output.*"
                + ONE_PER_CALL,
            ),
        )
    ),
    "01_dict_order": Mutant((caught("test_results_follow_the_calls_not_the_dict[*]", says=OWN_OUTPUT),)),
    "01_extra_ids": Mutant((caught("test_results_for_ids_never_called_are_left_out[*]", says=OWN_ID),)),
    "01_same_id": Mutant((caught("*[parallel_calls-*]", says=ONE_RESULT),)),
    "01_first_call_only": Mutant((caught("*[parallel_calls-*]", says=ONE_PER_CALL),)),
    "01_wrong_output": Mutant((caught("test_results_follow_the_calls_not_the_dict[*]", says=OWN_OUTPUT),)),
    "01_copy_not_kept": Mutant(
        (caught("*", says=r"did not append anything to req\.messages.*Append to req\.messages itself, not to a copy"),)
    ),
    "01_no_result_text": Mutant(
        (caught("test_a_call_without_a_result_gets_an_error_result[*]", says=r'result "no result" ' + UNMARKED),)
    ),
    # 01 has no run(): the outputs came from `results`, and the failure says so.
    "01_zip_values": Mutant(
        (
            caught(
                "test_results_follow_the_calls_not_the_dict[*]",
                says=r"^(?!.*run\(call\)).*but results held \"[^\"]+\" for that call.*" + OWN_OUTPUT,
            ),
        )
    ),
    "01_name_as_id": Mutant(
        (
            caught(
                "test_appends_the_turn_then_one_result_per_call[*-openai]",
                "test_appends_the_turn_then_one_result_per_call[*-openai-responses]",
                "test_appends_the_turn_then_one_result_per_call[*-anthropic]",
                says=r"answers get_weather, an id never called.*" + OWN_ID,
            ),
        )
    ),
    "01_returns_messages": Mutant((caught("*", says=r"should return None and change req\.messages in place"),)),
    # 02: the bounded loop
    "02_unbounded": Mutant(
        (
            caught("test_raises_once_the_bound_is_hit[runaway-*]", says=RUNAWAY),
            caught("test_raises_once_the_bound_is_hit[six_rounds-*]", says=r"made 7 requests .*the bound is 5"),
        )
    ),
    "02_bound_4": Mutant(
        (caught("test_raises_once_the_bound_is_hit[*]", says=r"raised after only 4 request\(s\).*give up after 5"),)
    ),
    "02_bound_6": Mutant(
        (caught("test_raises_once_the_bound_is_hit[*]", says=r"made 6 requests before raising; the bound is 5"),)
    ),
    "02_off_by_one": Mutant(
        (caught("test_raises_once_the_bound_is_hit[*]", says=r"made 6 requests before raising; the bound is 5"),)
    ),
    "02_returns_none": Mutant(
        (caught("test_raises_once_the_bound_is_hit[*]", says=r"returned None .*" + SHOULD_RAISE),)
    ),
    "02_returns_last": Mutant(
        (caught("test_raises_once_the_bound_is_hit[*]", says=r"returned a Response .*" + SHOULD_RAISE),)
    ),
    "02_assistant_text": Mutant((caught("*", says=TURN_FIRST),)),
    "02_results_first": Mutant((caught("*", says=TURN_FIRST),)),
    "02_no_append": Mutant(
        (caught("*", says=r"request 2 carried the same conversation as request 1; nothing was appended"),)
    ),
    "02_new_request": Mutant((caught("*", says=r"Send the same request every round, tools included"),)),
    "02_fake_answer": Mutant(
        (caught("test_finishes_the_task_within_the_bound[*]", says=r"returned without asking the model anything"),)
    ),
    "02_always_equal": Mutant((caught("*", says=r"should return a skyl\.Response|" + SHOULD_RAISE),)),
    "02_empty_body": Mutant(
        (caught("test_finishes_the_task_within_the_bound[*]", says=r"returned None .*should return a skyl\.Response"),)
    ),
    "02_raises_early": Mutant(
        (
            caught("test_finishes_the_task_within_the_bound[multi_step-*]", says=r"bound the loop at 5, not fewer"),
            caught("test_raises_once_the_bound_is_hit[*]", says=r"raised after only 2 request\(s\)"),
        )
    ),
    "02_returns_text": Mutant(
        (caught("test_finishes_the_task_within_the_bound[*]", says=r"\(str\); it should return a skyl\.Response"),)
    ),
    "02_wrong_signature": Mutant((caught("*", says=r"TypeError.*complete\(\) must take \(client, req, run\)"),)),
    "02_syntax_error": Mutant((caught("*", says=r"02_bounded_loop\.py has a syntax error at line 14"),)),
    # 03: several calls in one turn
    "03_while_true": Mutant((caught("test_raises_once_the_bound_is_hit[*]", says=RUNAWAY),)),
    "03_import_error": Mutant(
        (caught("*", says=r"raised ImportError while being imported: cannot import name 'tool_result'"),)
    ),
    "03_turn_per_call": Mutant((caught("*[parallel_calls-*]", "*[parallel_rounds-*]", says=TURN_ONCE),)),
    "03_turn_twice": Mutant((caught("*", says=TURN_ONCE),)),
    "03_first_call_only": Mutant((caught("*[parallel_calls-*]", "*[parallel_rounds-*]", says=ONE_PER_CALL),)),
    "03_same_id": Mutant(
        (
            caught(
                "*[parallel_calls-*]",
                "*[parallel_rounds-openai]",
                "*[parallel_rounds-openai-responses]",
                "*[parallel_rounds-anthropic]",
                says=ONE_RESULT,
            ),
        )
    ),
    "03_reversed": Mutant((caught("*[parallel_calls-*]", "*[parallel_rounds-*]", says=OWN_OUTPUT),)),
    "03_stale_ids": Mutant((caught("*[parallel_rounds-*]", "*[multi_step-*]", says=OWN_ID),)),
    "03_results_by_name": Mutant((caught("*[parallel_calls-*]", "*[parallel_rounds-*]", says=SHARED_KEY),)),
    "03_last_result_only": Mutant(
        (
            caught(
                "*[parallel_calls-*]",
                "*[parallel_rounds-*]",
                says=ONE_PER_CALL + r".*A call in that turn got no result",
            ),
        )
    ),
    "03_caps_calls_at_three": Mutant((caught("test_any_number_of_calls_in_any_turn[*]", says=ONE_PER_CALL),)),
    "03_first_round_only": Mutant(
        (caught("*[parallel_rounds-*]", "*[multi_step-*]", says=r"Loop until resp\.tool_calls\(\) is empty"),)
    ),
    # 04: report a runaway usefully
    "04_no_sequence": Mutant((caught(REPORT, says=SEQUENCE), caught(REPORT, says=ADVICE))),
    "04_last_round_names": Mutant((caught(REPORT, says=SEQUENCE),)),
    "04_ids_not_names": Mutant((caught(REPORT, says=SEQUENCE),)),
    "04_set_of_names": Mutant(
        (caught(REPORT.replace("*", "runaway-*"), REPORT.replace("*", "runaway_empty-*"), says=SEQUENCE),)
    ),
    "04_no_bound": Mutant((caught(REPORT, says=NAMES_BOUND),)),
    "04_no_advice": Mutant((caught(REPORT, says=ADVICE),)),
    "04_history_reset": Mutant((caught(REPORT, says=SEQUENCE),)),
    "04_wrong_bound": Mutant((caught(REPORT, says=NAMES_BOUND),)),
    "04_counter_of_names": Mutant((caught(REPORT.replace("*", "six_rounds-*"), says=SEQUENCE),)),
    "04_gave_up_see_sequence": Mutant((caught(REPORT, says=ADVICE),)),
    # 05: streaming
    "05_guesses_the_end": Mutant(
        (
            caught(f"{COLLECT}[*]", says=FROM_MESSAGE_END),
            caught(
                f"{COLLECT}[stop_reason_mismatch-anthropic]",
                f"{COLLECT}[stop_reason_mismatch-openai-responses]",
                says=r"- stop_reason: StopReason\.TOOL_USE, expected StopReason\.MAX_TOKENS \(from MessageEnd\)",
            ),
        )
    ),
    "05_drops_calls": Mutant(
        (
            caught(
                f"{COLLECT}[single_call-*]",
                f"{COLLECT}[parallel_calls-*]",
                says=r"tool calls: \[\], expected \[get_weather.*" + STREAM,
            ),
            caught(
                "test_complete_streams_every_turn[*]",
                says=r"returned a turn without tool calls, but the model's last turn asked for .*" + STREAM,
            ),
        )
    ),
    "05_concat_arguments": Mutant(
        (
            caught(
                f"{COLLECT}[parallel_calls-*]",
                "test_complete_streams_every_turn[parallel_calls-*]",
                says=r"raised JSONDecodeError.*" + FRAGMENTS,
            ),
        )
    ),
    "05_parse_each_fragment": Mutant(
        (
            caught(
                f"{COLLECT}[single_call-openai]",
                f"{COLLECT}[single_call-openai-responses]",
                f"{COLLECT}[single_call-anthropic]",
                "test_complete_streams_every_turn[*-openai]",
                "test_complete_streams_every_turn[*-openai-responses]",
                "test_complete_streams_every_turn[*-anthropic]",
                says=r"raised JSONDecodeError.*" + FRAGMENTS,
            ),
        )
    ),
    "05_arguments_as_text": Mutant(
        (caught(f"{COLLECT}[single_call-*]", f"{COLLECT}[parallel_calls-*]", says=r"json\.loads"),)
    ),
    "05_made_up_ids": Mutant(
        (
            caught(
                f"{COLLECT}[single_call-*]",
                f"{COLLECT}[parallel_calls-*]",
                says=r"rebuilt a different turn .*tool calls: .*" + STREAM,
            ),
        )
    ),
    "05_guessed_stop_reason": Mutant(
        (
            caught(
                f"{COLLECT}[single_call-*]",
                f"{COLLECT}[parallel_calls-*]",
                says=r"stop_reason: StopReason\.END_TURN, expected StopReason\.TOOL_USE \(from MessageEnd\)",
            ),
        )
    ),
    "05_drops_text": Mutant(
        (caught(f"{COLLECT}[plain_text-*]", f"{COLLECT}[single_call-*]", says=r"text: .*expected .*" + STREAM),)
    ),
    "05_uses_skyl_collector": Mutant((caught("*", says=r"off limits here\. Write your own collect_stream"),)),
    "05_complete_not_streaming": Mutant((caught("test_complete_*", says=r"without streaming.*" + STREAM),)),
    "05_unbounded": Mutant((caught("test_complete_is_still_bounded[*]", says=RUNAWAY),)),
    "05_text_after_calls": Mutant(
        (
            caught(
                f"{COLLECT}[single_call-*]",
                f"{COLLECT}[no_arguments-*]",
                f"{COLLECT}[stop_reason_mismatch-*]",
                says=r"part order: calls, text; expected text, calls: keep the parts in the order the stream "
                r"sent them.*" + STREAM,
            ),
            # Anthropic refuses the turn; the transcript shows it as sent, its text after its call.
            caught(
                "test_complete_streams_every_turn[single_call-anthropic]",
                says=r"-> 1 assistant calls get_weather\(city='Paris'\) \[toolu_\w+\] \"Let me check the weather",
            ),
        )
    ),
    # Anthropic streams a call without arguments as one empty fragment, which skyl drops: the buffer is "".
    "05_loads_empty_arguments": Mutant(
        (
            caught(
                f"{COLLECT}[no_arguments-anthropic]",
                "test_complete_streams_every_turn[no_arguments-anthropic]",
                says=r"raised JSONDecodeError.*json\.loads was given '': an empty string: a call without arguments "
                r"may stream no ToolCallDelta at all",
            ),
        )
    ),
    "05_overwrites_arguments": Mutant(
        (
            caught(
                *(f"{COLLECT}[single_call-{provider}]" for provider in ("openai", "openai-responses", "anthropic")),
                says=r"raised JSONDecodeError.*json\.loads was given 'is\"}': not one whole JSON document: were a "
                r"call's fragments joined \(\+=\), or did each one overwrite the last \(=\).*" + FRAGMENTS,
            ),
        )
    ),
    "05_literal_eval": Mutant(
        (
            caught(
                f"{COLLECT}[json_arguments-*]",
                "test_complete_streams_every_turn[json_arguments-*]",
                says=STREAM,
            ),
            caught(
                f"{COLLECT}[json_arguments-openai]",
                "test_complete_streams_every_turn[json_arguments-openai]",
                says=r"raised ValueError.*ast\.literal_eval reads Python, and a call's arguments are JSON \(true, "
                r"false, null\): parse them with json\.loads.*" + STREAM,
            ),
        )
    ),
    # 06: detect the end
    "06_stop_reason_ends": Mutant(
        (
            caught(
                "*[stop_reason_mismatch-openai]",
                "*[stop_reason_mismatch-openai-responses]",
                "*[stop_reason_mismatch-anthropic]",
                says=CALL_LIST,
            ),
        )
    ),
    "06_stop_reason_continues": Mutant(
        (caught("*[stop_reason_mismatch-openai]", "*[stop_reason_mismatch-anthropic]", says=CALL_LIST),)
    ),
    "06_end_turn_only": Mutant(
        (caught("*[stop_reason_mismatch-openai]", "*[stop_reason_mismatch-anthropic]", says=CALL_LIST),)
    ),
    "06_refusal_ends": Mutant(
        (
            caught(
                "test_ends_on_the_call_list_whatever_the_stop_reason[openai]",
                "test_ends_on_the_call_list_whatever_the_stop_reason[anthropic]",
                says=r"still asks for .*" + CALL_LIST,
            ),
        )
    ),
    "06_ends_on_text": Mutant((caught("*[stop_reason_mismatch-*]", "*[single_call-*]", says=CALL_LIST),)),
    "06_while_true": Mutant((caught("test_raises_once_the_bound_is_hit[*]", says=RUNAWAY),)),
    "06_raises_on_max_tokens": Mutant(
        (
            caught(
                "test_ends_when_the_call_list_is_empty[stop_reason_mismatch-anthropic]",
                "test_ends_when_the_call_list_is_empty[stop_reason_mismatch-openai-responses]",
                says=r"^(?!.*bound the loop at 5, not fewer).*raised ToolLoopError .*"
                + r"stop reason 'max_tokens' but still carried tool calls.*not the bound",
            ),
        )
    ),
    # 07: failing tools
    "07_exception_propagates": Mutant(
        (
            caught("test_a_tool_that_raises_becomes_an_error_result[*]", says=r"raised RuntimeError.*" + TOOL_FAILED),
            caught("test_an_unknown_tool_becomes_an_error_result[*]", says=r"raised KeyError.*" + TOOL_FAILED),
        )
    ),
    "07_failure_skipped": Mutant((caught("test_a_tool_that_raises*", "test_an_unknown_tool*", says=NOT_SKIPPED),)),
    "07_failure_empty": Mutant((caught("test_a_tool_that_raises*", "test_an_unknown_tool*", says=UNMARKED),)),
    "07_stops_on_failure": Mutant(
        (caught("test_a_tool_that_raises*", "test_an_unknown_tool*", says=r"raised ToolLoopError.*" + TOOL_FAILED),)
    ),
    "07_catches_key_error_only": Mutant(
        (caught("test_a_tool_that_raises*", says=r"raised RuntimeError.*" + TOOL_FAILED),)
    ),
    "07_catches_runtime_error_only": Mutant(
        (caught("test_an_unknown_tool*", says=r"raised KeyError.*" + TOOL_FAILED),)
    ),
    "07_catches_two_classes": Mutant(
        (
            caught(
                "test_whatever_a_tool_raises_becomes_an_error_result[*]",
                says=r"raised (ValueError|ConnectionError).*" + TOOL_FAILED,
            ),
        )
    ),
    "07_error_names_first_argument": Mutant(
        (
            caught(
                "test_a_failing_call_without_arguments_becomes_an_error_result[*]",
                says=r"raised IndexError.*" + TOOL_FAILED,
            ),
        )
    ),
    "07_break_after_failure": Mutant((caught("test_any_failing_calls_become_error_results[*]", says=ONE_PER_CALL),)),
    "07_error_as_user_text": Mutant((caught("test_a_tool_that_raises*", "test_an_unknown_tool*", says=ONE_PER_CALL),)),
    "07_bare_exception_text": Mutant(
        (caught("test_a_tool_that_raises*", "test_an_unknown_tool*", says=r"does not say so.*" + r"never silence"),)
    ),
    "07_unbounded": Mutant((caught("test_raises_once_the_bound_is_hit[*]", says=RUNAWAY),)),
    "07_catch_all_around_complete": Mutant(
        (
            caught("test_a_refused_request_reaches_the_caller[*]", says=PROVIDER_REFUSED),
            caught("test_raises_once_the_bound_is_hit[*]", says=r"returned a Response .*" + SHOULD_RAISE),
        )
    ),
    "07_retries_provider_error": Mutant(
        (
            caught(
                "test_a_refused_request_reaches_the_caller[*]",
                says=PROVIDER_REFUSED.replace("then .*", "then raised ToolLoopError.*"),
            ),
        )
    ),
    # 08: async
    "08_completion_order": Mutant((caught("test_runs_the_calls_of_a_turn_concurrently[*]", says=OWN_OUTPUT),)),
    "08_sequential": Mutant((caught("test_runs_the_calls_of_a_turn_concurrently[*]", says=r"one at a time"),)),
    "08_tasks_awaited_in_turn": Mutant(
        (caught("test_runs_the_calls_of_a_turn_concurrently[*]", says=r"one at a time"),)
    ),
    "08_asyncio_run_in_async": Mutant(
        (caught("test_runs_the_calls_of_a_turn_concurrently[*]", says=r"called asyncio\.run\(\) inside async code"),)
    ),
    "08_client_not_awaited": Mutant(
        (
            caught(
                "test_runs_the_calls_of_a_turn_concurrently[*]",
                "test_finishes_the_task[*]",
                "test_any_task_runs_each_turn_concurrently[*]",
                says=r"called client\.complete\(req\) without awaiting it.*resp = await client\.complete\(req\)",
            ),
        )
    ),
    "08_gather_a_list": Mutant(
        (
            caught(
                "test_runs_the_calls_of_a_turn_concurrently[*]",
                says=r"without awaiting it: the tool never ran, and complete\(\) raised TypeError.*"
                + r"asyncio\.gather takes each coroutine as an argument of its own",
            ),
        )
    ),
    "08_unbounded": Mutant((caught("test_raises_once_the_bound_is_hit[*]", says=RUNAWAY),)),
    "08_results_first": Mutant((caught(*ASYNC_PLAIN, says=TURN_FIRST),)),
    "08_results_by_name": Mutant((caught("test_runs_the_calls_of_a_turn_concurrently[*]", says=OWN_OUTPUT),)),
    "08_as_completed_zip": Mutant(
        (
            caught(
                "test_runs_the_calls_of_a_turn_concurrently[parallel_rounds-*]",
                says=r"Nothing was lost: the outputs of get_weather\(city='Lisbon'\) and get_weather\(city='Oslo'\) "
                r"are swapped\..*asyncio\.as_completed",
            ),
        )
    ),
    "08_batches_of_two": Mutant(
        (
            caught(
                "test_runs_the_calls_of_a_turn_concurrently[parallel_calls-*]",
                says=r"ran the calls of turn 1 at most 2 at a time \(of 3\).*and only 1 did",
            ),
        )
    ),
    "08_semaphore_of_four": Mutant(
        (caught("test_any_task_runs_each_turn_concurrently[*]", says=r"at most 4 at a time \(of [5-8]\)"),)
    ),
    "08_exception_text_as_result": Mutant(
        (caught("test_a_failing_call_becomes_an_error_result[*]", says=r"get_weather\(city='Tokyo'\) .*" + UNMARKED),)
    ),
    "08_swallows_provider_errors": Mutant(
        (
            caught(
                "test_a_refused_request_reaches_the_caller[*]",
                says=PROVIDER_REFUSED.replace("then .*", "then raised ToolLoopError.*"),
            ),
        )
    ),
    # Graded in a subprocess: before the harness closed the coroutines a learner never awaited, they
    # surfaced as warnings at exit and crashed the process running the grader.
    "08_missing_await": Mutant((caught("*", says=r"called run\(call\) without awaiting it"),), isolate=True),
    # 09: keep the whole turn (Chat Completions sends no reasoning: these mistakes pass there)
    "09_rebuilds_from_calls": Mutant(
        (caught(*(f"{KEEPS}[*-{provider}]" for provider in REASONING_PROVIDERS), says=WHOLE),)
    ),
    "09_collector_drops_reasoning": Mutant(
        (
            caught(
                *(f"test_collect_stream_keeps_the_reasoning[*-{p}]" for p in REASONING_PROVIDERS), says=WHOLE_STREAM
            ),
            caught(*(f"{KEEPS}[stream-*-{provider}]" for provider in REASONING_PROVIDERS), says=WHOLE),
        )
    ),
    "09_reasoning_after_calls": Mutant(
        (
            caught(f"{KEEPS}[*-openai-responses]", f"{KEEPS}[*-anthropic]", says=WHOLE),
            # The transcript shows the turn as it was sent: the reasoning after the calls.
            caught(
                f"{KEEPS}[complete-multi_step_reasoning-openai-responses]",
                f"{KEEPS}[complete-multi_step_reasoning-anthropic]",
                says=r"-> 1 assistant calls find_restaurant\(city='Lyon', cuisine='bistro'\) \[\w+\] \[reasoning x\d\]",
            ),
            # Gemini carries a signature on a call part: after one call, last is still first.
            caught(f"{KEEPS}[*-parallel_calls_reasoning-gemini]", says=WHOLE),
            caught(
                *(f"test_collect_stream_keeps_the_reasoning[*-{p}]" for p in REASONING_PROVIDERS), says="order of parts"
            ),
        )
    ),
    # Strict echo only: no capture shows the real API refusing a turn that left one block out.
    "09_drops_redacted_thinking": Mutant(
        (
            caught(
                f"{KEEPS}[stream-multi_step_reasoning-anthropic]",
                says=r"sandbox: messages\[3\] is the model's turn without its `redacted_thinking` block.*" + WHOLE,
            ),
        )
    ),
    "09_text_after_calls": Mutant(
        (
            caught(
                *(
                    f"test_collect_stream_keeps_the_reasoning[single_call_reasoning-{p}]"
                    for p in ("openai", "openai-responses", "anthropic")
                ),
                says=WHOLE_STREAM,
            ),
            caught(
                "test_collect_stream_keeps_the_reasoning[single_call_reasoning-openai]",
                says=r"part order: calls, text; expected text, calls.*" + WHOLE_STREAM,
            ),
            # Anthropic refuses text after a tool_use; the transcript shows the turn as sent.
            caught(
                f"{KEEPS}[stream-single_call_reasoning-anthropic]",
                says=r"-> 1 assistant \[reasoning x1\] calls get_weather\(city='Paris'\) \[toolu_\w+\] \"Let me check",
            ),
        )
    ),
    # 10: retry without repeating yourself
    "10_no_retry": Mutant(
        (
            caught(*FAULTED, f"{CUT}[*]", says=r"That is one the provider asks you to retry.*" + RETRY),
            caught(GIVES_UP, says=r"without retrying once.*" + RETRY),
        )
    ),
    "10_retries_only_429": Mutant(
        (caught("test_retries_a_503[*]", f"{CUT}[*]", says=r"That is one the provider asks you to retry.*" + RETRY),)
    ),
    # A retried 400 is told challenge 10's rule, never 07's "wrap run(call) alone".
    "10_retries_400": Mutant(
        (
            caught(
                "test_never_retries_a_400[*]",
                says=r"the provider refused request 2 with a 400, and complete\(\) sent \d more.*" + RETRY,
            ),
        )
    ),
    "10_retries_all_but_400": Mutant(
        (
            caught(
                "test_never_retries_any_other_refusal[*]",
                says=r"refused request 2 with a 40[134], and complete\(\) sent \d more .*a 40[134] fails the same "
                r"way every time.*Provider said: \S+ 40[134]: .*" + RETRY,
            ),
        )
    ),
    "10_fixed_sleep": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*-openai]",
                "test_retries_a_rate_limit_and_an_overload[*-anthropic]",
                says=r"again before the 300 ms the provider asked for.*" + RETRY,
            ),
            caught("test_retries_a_503[*-openai]", says=r"again before the 500 ms the provider asked for.*" + RETRY),
        )
    ),
    "10_hint_as_milliseconds": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]",
                says=r"again before the \d+ ms the provider asked for.*" + RETRY,
            ),
        )
    ),
    "10_retries_cuts_forever": Mutant(
        (
            caught(
                "test_gives_up_on_a_connection_that_keeps_breaking[*]",
                says=r"sent one request 11 times; give up after 3 attempts.*" + GIVE_UP,
            ),
        )
    ),
    "10_counts_messages": Mutant(
        (
            caught(
                GIVES_UP,
                says=r"gave up on a request of 3 messages.*It should also name: - the number of attempts, "
                r"as a count of them \(3 attempts\).*" + GIVE_UP,
            ),
        )
    ),
    # The 503 of OpenAI's and Gemini's overload holds a 3: read as a number in context, it is no count.
    "10_reraises_provider_error": Mutant(
        (caught(GIVES_UP, says=r"It should also name: .*- the number of attempts, as a count of them.*" + GIVE_UP),)
    ),
    "10_tool_error_propagates": Mutant((caught("test_a_failing_tool_still_gets_a_result[*]", says=TOOL_FAILED),)),
    # Told which field changed, not "a different conversation (3 messages; the failed request held 3)".
    "10_retry_asks_for_less": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]",
                says=r"and the request after it changed (max_\w*tokens: 1024 -> 512|generationConfig: .*1024.* -> "
                r".*512).*" + NO_REPEAT,
            ),
        )
    ),
    # Told that it spent rounds on retries, not to "bound the loop at 5, not fewer".
    "10_retries_spend_rounds": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]",
                says=r"\d of them retries, while the model was still working: it counted each retry as one of its 5 "
                r"rounds.*" + NO_REPEAT,
            ),
        )
    ),
    "10_runs_calls_as_they_stream": Mutant(
        (
            caught(
                "test_never_runs_a_tool_twice_when_a_stream_breaks_after_its_call[*]",
                says=r"ran check_availability\(.*\) 2 times, but the model asked for it 1 time.*" + NO_REPEAT,
            ),
        )
    ),
    # An immediate retry is judged on its arrival, against a hint held from when its error was made, three
    # times a test: the machine would have to stall this loop past 40 ms at each of them to let it through.
    "10_ignores_hint": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]",
                says=r"again before the \d+ ms the provider asked for.*" + RETRY,
            ),
        )
    ),
    "10_unbounded_retries": Mutant(
        (caught(GIVES_UP, says=r"sent one request \d+ times; give up after 3 attempts.*" + GIVE_UP),)
    ),
    "10_vague_give_up": Mutant(
        (caught(GIVES_UP, says=r"It should also name: - the status the provider sent .*- the number of attempts"),)
    ),
    "10_turn_twice": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]", says=r"and the request after it carried .*" + NO_REPEAT
            ),
        )
    ),
    "10_reruns_tools": Mutant(
        (
            caught(
                "test_retries_a_rate_limit_and_an_overload[*]",
                says=r"ran \w+\(.*\) \d times, but the model asked for it 1 time.*" + NO_REPEAT,
            ),
        )
    ),
    "10_keeps_half_turn": Mutant(
        (
            caught(
                f"{CUT}[stream-*]",
                says=r"returned after a connection that broke .*" + NO_REPEAT,
            ),
        )
    ),
}


# -- grading an implementation -------------------------------------------------------------------


@dataclass
class Graded:
    """One grading session: each test's outcome and failure text, and how the session ended."""

    outcomes: dict[str, str] = field(default_factory=dict)
    """Node id (`challenges/02_bounded_loop/test_bounded_loop.py::test_x[runaway-openai]`) -> passed |
    failed | not started."""
    texts: dict[str, str] = field(default_factory=dict)
    crash: str = ""
    warnings: list[str] = field(default_factory=list)
    """Warnings the run showed the learner, and errors outside a test's call: noise from the harness."""

    def failures(self) -> dict[str, str]:
        return {name: self.texts.get(name, "") for name, outcome in self.outcomes.items() if outcome != "passed"}


class _Collector:
    def __init__(self, graded: Graded) -> None:
        self.graded = graded

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid
        if report.when == "call" or report.failed:
            text = report.longreprtext
            failed = report.failed or self.graded.outcomes.get(name) == "failed"
            outcome = "passed" if not failed else "not started" if _is_not_started(text) else "failed"
            self.graded.outcomes[name] = outcome
            if failed:
                self.graded.texts[name] = self.graded.texts.get(name, "") + text
            if report.failed and report.when != "call":
                self.graded.warnings.append(f"error in {report.when} of {name}:\n{text}")

    def pytest_warning_recorded(self, warning_message: object, nodeid: str) -> None:
        self.graded.warnings.append(f"{nodeid}: {warning_message}")


def _is_not_started(text: str) -> bool:
    return bool(re.fullmatch(r"\d\d_\w+: not started \(.*\)", text.strip()))


def _arguments(target: str, impl: Path | None) -> list[str]:
    args = [str(CHALLENGES / target), "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
    return [*args, "--impl", str(impl)] if impl is not None else args


def _in_process(target: str, impl: Path) -> Graded:
    graded = Graded()
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = pytest.main(_arguments(target, impl), plugins=[_Collector(graded)])
    except BaseException as exc:  # noqa: BLE001 - a crashing session is a finding, not an error here
        graded.crash = f"pytest.main raised {type(exc).__name__}: {exc}"
    else:
        if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            graded.crash = f"pytest exited with {code!r}:\n{out.getvalue()[-2000:]}"
    return graded


def _in_subprocess(target: str, impl: Path) -> Graded:
    """The run a learner would make, read back from the harness's own --report."""
    with tempfile.TemporaryDirectory(prefix="sandbox-graders-") as scratch:
        report = Path(scratch) / "results.json"
        command = [sys.executable, "-m", "pytest", *_arguments(target, impl), "--report", str(report)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        tests = json.loads(report.read_text(encoding="utf-8"))["tests"]
    graded = Graded()
    for test in tests:
        name = test["extra_data"]["nodeid"]
        graded.outcomes[name] = test["extra_data"]["outcome"]
        graded.texts[name] = test["output"]
    if done.returncode not in (0, 1) or "Traceback (most recent call last)" in done.stderr:
        graded.crash = f"exit status {done.returncode}; the run ended with:\n{(done.stdout + done.stderr)[-2000:]}"
    if "warnings summary" in done.stdout or re.search(r"\b\d+ errors?\b", done.stdout[-300:]):
        graded.warnings.append(done.stdout[-3000:])
    return graded


def _only_module(directory: Path) -> Path:
    modules = sorted(directory.glob("*.py"))
    assert len(modules) == 1, f"{directory} should hold exactly one module, named after its challenge: {modules}"
    return modules[0]


@functools.cache
def grade(directory: Path, isolate: bool = False) -> Graded:
    """Grade the one challenge module in `directory`, for that challenge only."""
    challenge = _only_module(directory).stem
    return _in_subprocess(challenge, directory) if isolate else _in_process(challenge, directory)


def _pattern(test: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(piece) for piece in test.split("*")))


def _matching(graded: Graded, tests: tuple[str, ...]) -> list[str]:
    patterns = [_pattern(test) for test in tests]
    return [name for name in graded.outcomes if any(pattern.fullmatch(_test_name(name)) for pattern in patterns)]


def _test_name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


def _of(graded: Graded, folder: str) -> list[str]:
    return [name for name in graded.outcomes if name.startswith(f"challenges/{folder}/")]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _show(graded: Graded, names: list[str]) -> str:
    return "\n\n".join(f"--- {name} ({graded.outcomes[name]}):\n{graded.texts.get(name, '')[:1500]}" for name in names)


# -- the tests -----------------------------------------------------------------------------------


def _expectations() -> Iterator[object]:
    for name, mutant in MUTANTS.items():
        for number, expectation in enumerate(mutant.caught, 1):
            marks = (
                [pytest.mark.xfail(reason=f"grader gap: {expectation.gap}", strict=not expectation.flaky)]
                if expectation.gap
                else []
            )
            yield pytest.param(name, expectation, id=f"{name}-{number}", marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize(("mutant", "expected"), list(_expectations()))
def test_mutant_is_caught_for_the_right_reason(mutant: str, expected: Caught) -> None:
    graded = grade(MUTANTS_DIR / mutant, MUTANTS[mutant].isolate)
    names = _matching(graded, expected.tests)
    assert names, f"No test of {mutant}'s challenge matches {expected.tests}; graded: {sorted(graded.outcomes)}" + (
        f"\nthe grading run crashed: {graded.crash}" if graded.crash else ""
    )
    passed = [name for name in names if graded.outcomes[name] == "passed"]
    assert not passed, f"{mutant} passed tests that should catch it: {passed}"
    silent = [name for name in names if not re.search(expected.says, _flat(graded.texts[name]), re.IGNORECASE)]
    assert not silent, f"{mutant} failed, but these failures do not say /{expected.says}/:\n{_show(graded, silent)}"


def _clean_marks(name: str) -> list[pytest.MarkDecorator]:
    gap = MUTANTS[name].unclean_gap
    return [pytest.mark.xfail(reason=f"grader gap: {gap}", strict=True)] if gap else []


@pytest.mark.parametrize("mutant", [pytest.param(name, marks=_clean_marks(name), id=name) for name in MUTANTS])
def test_mutant_fails_cleanly(mutant: str) -> None:
    """Caught at all, graded to the end, and never mistaken for an untouched stub."""
    graded = grade(MUTANTS_DIR / mutant, MUTANTS[mutant].isolate)
    assert not graded.crash, f"grading {mutant} did not end cleanly: {graded.crash}"
    assert not graded.warnings, f"grading {mutant} showed warnings:\n" + "\n".join(graded.warnings)
    assert graded.failures(), f"{mutant} passed every test of its challenge"
    stubs = [name for name, outcome in graded.outcomes.items() if outcome == "not started"]
    assert not stubs, f"{mutant} was reported as not started in {stubs}"
    internal = [
        name for name, text in graded.failures().items() if "sandbox/grading/" in text or "INTERNALERROR" in text
    ]
    assert not internal, f"the grader itself crashed on {mutant}:\n{_show(graded, internal)}"
    twice = [name for name, text in graded.failures().items() if "During handling of the above exception" in text]
    assert not twice, f"a failure of {mutant} is printed twice, chained to another:\n{_show(graded, twice)}"


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(path.name for path in VARIANTS_DIR.iterdir() if path.is_dir()))
def test_variant_passes(variant: str) -> None:
    graded = grade(VARIANTS_DIR / variant)
    assert not graded.crash, f"grading {variant} did not end cleanly: {graded.crash}"
    assert not graded.warnings, f"grading {variant} showed warnings:\n" + "\n".join(graded.warnings)
    assert graded.outcomes, f"no test graded {variant}"
    failures = graded.failures()
    assert not failures, f"the correct variant {variant} failed:\n{_show(graded, list(failures))}"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    """Every challenge's exercise.py, copied and graded as an --impl directory (no progress file written)."""
    directory = tmp_path_factory.mktemp("stubs")
    for folder in FOLDERS:
        shutil.copyfile(CHALLENGES / folder / "exercise.py", directory / f"{folder}.py")
    return _in_process("", directory)


@pytest.fixture(scope="module")
def solutions() -> Graded:
    return _in_process("", SOLUTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_stub_reports_not_started(stubs: Graded, folder: str) -> None:
    names = _of(stubs, folder)
    assert names, f"no test graded {folder}"
    started = {name: stubs.outcomes[name] for name in names if stubs.outcomes[name] != "not started"}
    assert not started, (
        f"challenges/{folder}/exercise.py should report 'not started' in every test (is it still the shipped "
        f"stub?), but got {started}:\n{_show(stubs, list(started))}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_solution_passes(solutions: Graded, folder: str) -> None:
    assert not solutions.crash, solutions.crash
    names = _of(solutions, folder)
    assert names, f"no test graded solutions/{folder}.py"
    failed = [name for name in names if solutions.outcomes[name] != "passed"]
    assert not failed, f"solutions/{folder}.py failed:\n{_show(solutions, failed)}"


# -- the catalogue itself --------------------------------------------------------------------------


def test_every_mutant_directory_is_in_the_table() -> None:
    on_disk = {path.name for path in MUTANTS_DIR.iterdir() if path.is_dir()}
    assert on_disk - set(MUTANTS) == set(), "mutants without expectations: add them to MUTANTS"
    assert set(MUTANTS) - on_disk == set(), "expectations without a mutant directory"


@pytest.mark.parametrize(
    ("directory", "opening"),
    [(path, "Breaks ") for path in sorted(MUTANTS_DIR.iterdir()) if path.is_dir()]
    + [(path, "Correct") for path in sorted(VARIANTS_DIR.iterdir()) if path.is_dir()],
    ids=lambda value: value.name if isinstance(value, Path) else None,
)
def test_catalogue_entry_names_its_challenge_and_rule(directory: Path, opening: str) -> None:
    module = _only_module(directory)
    assert module.stem in FOLDERS, f"{module} must be named after a challenge folder: {FOLDERS}"
    assert directory.name[:2] == module.stem[:2], f"{directory.name} should start with its challenge's number"
    source = module.read_text(encoding="utf-8")
    assert source.startswith(f'"""{opening}'), f"{module}'s docstring should open with {opening!r}: the rule it breaks"
    if opening.startswith("Breaks"):
        assert "Caught by " in source.split('"""')[1], f"{module}'s docstring should say which test catches it"
