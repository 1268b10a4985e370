"""Each ordering mistake from the lesson meets the real provider's status and text, on every wire format."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import sandbox
from sandbox import Rule, skyl
from tests.conftest import scenario_request

Mistake = Callable[[skyl.Request, skyl.Response], None]


def _results(req: skyl.Request, calls: list[skyl.ToolCall]) -> None:
    for call in calls:
        req.messages.append(skyl.tool_result_message(call.id, f"result for {call.name}"))


def text_reconstruction_then_results(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(skyl.assistant_text(resp.text()))
    _results(req, resp.tool_calls())


def text_reconstruction_alone(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(skyl.assistant_text(resp.text()))
    req.messages.append(skyl.user_text("Well?"))


def turn_appended_per_call(req: skyl.Request, resp: skyl.Response) -> None:
    for call in resp.tool_calls():
        req.messages.append(resp.message)
        _results(req, [call])


def results_before_turn(req: skyl.Request, resp: skyl.Response) -> None:
    _results(req, resp.tool_calls())
    req.messages.append(resp.message)


def missing_result(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(resp.message)
    _results(req, resp.tool_calls()[:-1])


def duplicate_result(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(resp.message)
    calls = resp.tool_calls()
    _results(req, [*calls, calls[0]])


def unknown_call_id(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(resp.message)
    calls = resp.tool_calls()
    _results(req, calls[:-1])
    req.messages.append(skyl.tool_result_message("call_made_up_by_the_loop", "?"))


def turn_appended_twice(req: skyl.Request, resp: skyl.Response) -> None:
    req.messages.append(resp.message)
    req.messages.append(resp.message)
    _results(req, resp.tool_calls())


# (mistake, scenario, provider) -> (rules accepted, a piece of the provider's verbatim message)
EXPECTED: dict[tuple[str, str], tuple[set[Rule], str]] = {
    ("text_reconstruction_then_results", "openai"): (
        {Rule.RESULT_WITHOUT_TURN},
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ),
    ("text_reconstruction_then_results", "openai-responses"): (
        {Rule.RESULT_WITHOUT_TURN, Rule.UNKNOWN_CALL_ID},
        "No tool call found for function call output with call_id",
    ),
    ("text_reconstruction_then_results", "anthropic"): (
        {Rule.RESULT_WITHOUT_TURN, Rule.UNKNOWN_CALL_ID},
        "unexpected `tool_use_id` found in `tool_result` blocks",
    ),
    ("text_reconstruction_then_results", "gemini"): (
        {Rule.RESULT_WITHOUT_TURN},
        "Please ensure that function response turn comes immediately after a function call turn.",
    ),
    ("results_before_turn", "openai"): (
        {Rule.RESULT_WITHOUT_TURN},
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ),
    ("results_before_turn", "openai-responses"): (
        {Rule.RESULT_WITHOUT_TURN, Rule.UNKNOWN_CALL_ID},
        "No tool call found for function call output with call_id",
    ),
    ("results_before_turn", "anthropic"): (
        {Rule.RESULT_WITHOUT_TURN, Rule.UNKNOWN_CALL_ID},
        "unexpected `tool_use_id` found in `tool_result` blocks",
    ),
    ("results_before_turn", "gemini"): (
        {Rule.RESULT_WITHOUT_TURN},
        "Please ensure that function response turn comes immediately after a function call turn.",
    ),
    ("missing_result", "openai"): (
        {Rule.MISSING_RESULT},
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages:",
    ),
    ("missing_result", "openai-responses"): ({Rule.MISSING_RESULT}, "No tool output found for function call"),
    ("missing_result", "anthropic"): (
        {Rule.MISSING_RESULT},
        "`tool_use` ids were found without `tool_result` blocks immediately after:",
    ),
    ("missing_result", "gemini"): (
        {Rule.MISSING_RESULT},
        "Please ensure that the number of function response parts is equal to the number of function "
        "call parts of the function call turn.",
    ),
    ("turn_appended_per_call", "openai"): (
        {Rule.MISSING_RESULT},
        "The following tool_call_ids did not have response messages:",
    ),
    ("turn_appended_per_call", "anthropic"): (
        {Rule.MISSING_RESULT},
        "`tool_use` ids were found without `tool_result` blocks immediately after:",
    ),
    ("turn_appended_per_call", "gemini"): (
        {Rule.MISSING_RESULT},
        "Please ensure that the number of function response parts is equal to the number of function "
        "call parts of the function call turn.",
    ),
    ("duplicate_result", "openai"): ({Rule.DUPLICATE_RESULT}, "Invalid parameter: Duplicate value for 'tool_call_id'"),
    ("unknown_call_id", "openai"): (
        {Rule.UNKNOWN_CALL_ID},
        "Invalid parameter: 'tool_call_id' of 'call_made_up_by_the_loop' not found in 'tool_calls' of previous "
        "message.",
    ),
    ("unknown_call_id", "openai-responses"): (
        {Rule.UNKNOWN_CALL_ID, Rule.RESULT_WITHOUT_TURN, Rule.MISSING_RESULT},
        "call_made_up_by_the_loop",
    ),
    ("unknown_call_id", "anthropic"): (
        {Rule.MISSING_RESULT},
        "`tool_use` ids were found without `tool_result` blocks immediately after:",
    ),
    ("turn_appended_twice", "openai"): (
        {Rule.MISSING_RESULT},
        "The following tool_call_ids did not have response messages:",
    ),
    # Two model contents in a row are one turn to the API (see wire/gemini/_validate.merge_model_runs): its
    # calls are doubled and the responses answer half of them.
    ("turn_appended_twice", "gemini"): (
        {Rule.MISSING_RESULT},
        "Please ensure that the number of function response parts is equal to the number of function call parts",
    ),
}

MISTAKES: dict[str, Mistake] = {
    "text_reconstruction_then_results": text_reconstruction_then_results,
    "results_before_turn": results_before_turn,
    "missing_result": missing_result,
    "turn_appended_per_call": turn_appended_per_call,
    "duplicate_result": duplicate_result,
    "unknown_call_id": unknown_call_id,
    "turn_appended_twice": turn_appended_twice,
}


def _send_mistake(provider: str, mistake: Mistake, scenario: str) -> tuple[skyl.ProviderError, sandbox.Exchange]:
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    req = scenario_request(scenario)
    resp = client.complete(req)
    mistake(req, resp)
    with pytest.raises(skyl.ProviderError) as info:
        client.complete(req)
    exchange = transport.journal.last
    assert exchange is not None and exchange.error is not None
    return info.value, exchange


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_mistake_is_rejected_like_the_real_provider(provider: str, mistake: str) -> None:
    scenario = "single_call" if mistake.startswith("text_reconstruction") else "parallel_calls"
    error, exchange = _send_mistake(provider, MISTAKES[mistake], scenario)
    assert 400 <= error.status < 500, "a mistake is the caller's: never a 5xx"
    assert exchange.error is not None
    expected = EXPECTED.get((mistake, provider))
    if expected is not None:
        rules, text = expected
        assert exchange.error.rule in rules
        assert text in error.message, "the provider's text must reach the learner verbatim"
    assert exchange.error.message == error.message


def test_text_reconstruction_alone_is_caught_by_the_sandbox(provider: str) -> None:
    error, exchange = _send_mistake(provider, text_reconstruction_alone, "single_call")
    assert exchange.error is not None and exchange.error.rule is Rule.HISTORY_MISMATCH
    assert "it has no tool calls" in error.message
    assert "never a text-only reconstruction such as skyl.assistant_text" in error.message
    assert exchange.error.message_index == 1, "the transcript marks the rebuilt turn"


def test_edited_turn_is_caught_by_the_strict_echo(provider: str) -> None:
    transport = sandbox.transport(echo="strict")
    client = skyl.Client(provider, transport=transport)
    req = scenario_request("single_call")
    resp = client.complete(req)
    (call,) = resp.tool_calls()
    edited = skyl.ToolCall(call.id, call.name, {"city": "Lyon"}, meta=call.meta)
    req.messages.append(skyl.Message("assistant", [*resp.message.content[:-1], edited]))
    req.messages.append(skyl.tool_result_message(call.id, "18C"))
    with pytest.raises(skyl.ProviderError, match="it has get_weather\\(city='Lyon'\\)"):
        client.complete(req)
