"""What the graders accept and reject: runaway reports worded any way a person would accept, and the
order and content of the results that reached the provider."""

from __future__ import annotations

import pytest

from sandbox.grading.judge._checks import EXPECT_ERROR, check_history, missing_from_report, says_error
from sandbox.skyl import Message, Text, ToolCall, ToolResult, tool_result_message, user_text

RUNAWAY = [["get_weather"]] * 5
SEQUENCE = ["get_weather"] * 5
TOOLS = {"get_weather", "get_time"}


@pytest.mark.parametrize(
    "message",
    [
        "gave up after 5 tool rounds; call sequence was [get_weather get_weather get_weather get_weather "
        "get_weather]: check what these tools return",
        "Stopped after 5 rounds. Calls: get_weather, get_weather, get_weather, get_weather, get_weather. "
        "Check the tool outputs.",
        "5 rounds: get_weather -> get_weather -> get_weather -> get_weather -> get_weather; look at what "
        "the tools returned",
        "hit the bound of five rounds with ['get_weather', 'get_weather', 'get_weather', 'get_weather', "
        "'get_weather'] - inspect their results",
        "bound (5) reached after get_weather get_weather get_weather get_weather; verify the tool output",
        "gave up after 5 rounds; calls in order: get_weather x5. Check what these tools return.",
        "5 rounds of get_weather (5 times): see what get_weather returns, or raise the bound",
    ],
    ids=["lesson", "commas", "arrows", "python-list", "last-round-left-out", "run-length", "times"],
)
def test_runaway_report_accepts_any_wording_a_person_would(message: str) -> None:
    assert missing_from_report(message, 5, [SEQUENCE, SEQUENCE[:-1]], TOOLS) == []


@pytest.mark.parametrize(
    ("message", "missing"),
    [
        ("too many tool rounds", ["bound", "sequence", "look"]),
        ("gave up after 5 rounds: check what the tools return", ["sequence"]),
        ("gave up: [get_weather get_weather get_weather get_weather get_weather], check what they return", ["bound"]),
        ("gave up after 5 rounds: [get_weather get_weather get_weather get_weather get_weather]", ["look"]),
        ("after 5 rounds: get_weather x3 - check what it returns", ["sequence"]),
        ("gave up after 5 rounds, see call sequence: get_weather get_weather get_weather get_weather", ["look"]),
        ("after 15 rounds: [get_weather get_weather get_weather get_weather get_weather], check the output", ["bound"]),
    ],
    ids=["vague", "no-sequence", "no-bound", "no-advice", "short-run", "gave-see", "wrong-number"],
)
def test_runaway_report_names_what_is_missing(message: str, missing: list[str]) -> None:
    found = missing_from_report(message, 5, [SEQUENCE, SEQUENCE[:-1]], TOOLS)
    keys = {"bound": "the bound it hit", "sequence": "the call sequence", "look": "what to look at"}
    assert [item.split(":")[0].split(",")[0] for item in found] == [keys[key] for key in missing]


PARIS = ToolCall("call_1", "get_weather", {"city": "Paris"})
TOKYO = ToolCall("call_2", "get_weather", {"city": "Tokyo"})
OUTPUTS = {"call_1": "18C, clear", "call_2": "24C, humid"}


def conversation(*results: Message) -> list[Message]:
    return [user_text("weather?"), Message("assistant", [Text("Checking."), PARIS, TOKYO]), *results]


def expected(call: ToolCall) -> object:
    return OUTPUTS[call.id]


def test_history_in_call_order_with_each_calls_output_passes() -> None:
    messages = conversation(tool_result_message("call_1", "18C, clear"), tool_result_message("call_2", "24C, humid"))
    assert check_history(messages, messages, expected, has_call_ids=True) is None


def test_history_out_of_call_order_marks_the_first_result() -> None:
    messages = conversation(tool_result_message("call_2", "24C, humid"), tool_result_message("call_1", "18C, clear"))
    problem = check_history(messages, messages, expected, has_call_ids=True)
    assert problem is not None and problem.index == 2
    assert problem.headline.startswith("message 2 answers call_2, but the first call of message 1 is get_weather")


def test_history_without_ids_is_checked_by_content() -> None:
    messages = conversation(tool_result_message("p0", "24C, humid"), tool_result_message("p1", "18C, clear"))
    problem = check_history(messages, messages, expected, has_call_ids=False)
    assert problem is not None and 'run(call) returned "18C, clear" for that call' in problem.headline


def test_history_missing_a_result_marks_where_it_should_be() -> None:
    messages = conversation(tool_result_message("call_1", "18C, clear"))
    problem = check_history(messages, messages, expected, has_call_ids=True)
    assert problem is not None and problem.index == 3
    assert problem.headline.startswith(
        "the second call of message 1, get_weather(city='Tokyo') [call_2], has no result"
    )


@pytest.mark.parametrize(
    ("result", "flagged"),
    [
        (ToolResult("c", "whatever", is_error=True), True),
        (ToolResult("c", "ERROR: no result"), True),
        (ToolResult("c", "KeyError: 'get_time' failed"), True),
        (ToolResult("c", "Tool get_time is unknown"), True),
        (ToolResult("c", "18C, clear"), False),
        (ToolResult("c", "no result"), False),
        (ToolResult("c", ""), False),
    ],
    ids=["flag", "error-text", "failed-text", "unknown-text", "plain", "no-result", "empty"],
)
def test_an_error_result_is_flagged_or_worded_as_one(result: ToolResult, flagged: bool) -> None:
    assert says_error(result, None) is flagged


def test_the_learners_flag_counts_where_the_wire_drops_it() -> None:
    on_the_wire = ToolResult("c", "no output")
    as_sent = ToolResult("c", "no output", is_error=True)
    assert not says_error(on_the_wire, None)
    assert says_error(on_the_wire, as_sent)


def test_history_expecting_an_error_rejects_a_silent_result() -> None:
    messages = conversation(tool_result_message("call_1", "18C, clear"), tool_result_message("call_2", "-"))
    problem = check_history(
        messages, messages, lambda call: EXPECT_ERROR if call.id == "call_2" else expected(call), has_call_ids=True
    )
    assert problem is not None and problem.index == 3
    assert 'its tool failed, or it had no entry in the results), but its result "-" does not say so' in problem.headline
    assert problem.kind == "error_result", "the Rule line names the error-result rule, not call order"


def test_a_result_from_a_dict_keyed_by_tool_name_says_why() -> None:
    messages = conversation(tool_result_message("call_1", "24C, humid"), tool_result_message("call_2", "24C, humid"))
    problem = check_history(messages, messages, expected, has_call_ids=True)
    assert problem is not None and problem.index == 2
    assert "Two calls of get_weather share the key 'get_weather', so the second overwrote the first" in problem.headline


def test_the_source_of_the_outputs_is_named_as_the_learner_knows_it() -> None:
    messages = conversation(tool_result_message("call_1", "24C, humid"), tool_result_message("call_2", "18C, clear"))
    problem = check_history(messages, messages, expected, has_call_ids=False, produced="results held")
    assert problem is not None and 'but results held "18C, clear" for that call' in problem.headline
    assert "run(call)" not in problem.headline
