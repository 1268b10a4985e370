"""Function scenarios (the FunctionModel shape): `Scenario(respond=...)` answers each turn from the
conversation, through every official SDK, with deterministic ids and the replay's echo checks; a
function that has no answer, fails, or answers nonsense is refused by name."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

import sandbox
from sandbox import Call, Scenario, Step
from sandbox.skyl import Tool
from tests.sdk_drivers import DRIVERS, in_process_options

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
TOOLS = [Tool("lookup_order", "Look up an order.", ORDER)]


def answer(conversation: sandbox.Conversation) -> Step | str | None:
    """Look the order up, then quote the result; anything else is not this bot's business."""
    last = conversation.messages[-1]
    if last.role == "tool":
        return f"Order status: {last.tool_results()[0].content}."
    if "order" in last.text():
        return Step(calls=[Call("lookup_order", {"order_id": "ord_1042"})])
    return None


def bot(respond: Any = answer) -> Scenario:
    return Scenario(
        "bot",
        respond=respond,
        tools=TOOLS,
        prompt="Where is my order?",
        tool_outputs={"lookup_order(order_id='ord_1042')": "shipped"},
    )


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_function_answers_each_turn(provider: str, stream: bool) -> None:
    transport = sandbox.httpx2_transport(bot())
    reply = DRIVERS[provider](bot(), stream=stream, **in_process_options(provider, transport))
    assert reply == "Order status: shipped."
    transport.journal.assert_called("lookup_order", order_id="ord_1042")
    assert [exchange.step for exchange in transport.journal] == [0, 1]


def _ask(transport: sandbox.Httpx2Transport, messages: list[Any]) -> Any:
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport))
    tools: Any = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
    return client.chat.completions.create(model="bot", messages=messages, tools=tools).choices[0].message


def test_its_ids_are_deterministic_and_its_echo_is_checked() -> None:
    first = _ask(sandbox.httpx2_transport(bot()), [{"role": "user", "content": "my order?"}])
    again = _ask(sandbox.httpx2_transport(bot()), [{"role": "user", "content": "my order?"}])
    assert first.tool_calls[0].id == again.tool_calls[0].id
    turn = first.model_dump(exclude_none=True)
    turn["tool_calls"][0]["function"]["arguments"] = '{"order_id": "ord_9"}'
    messages = [{"role": "user", "content": "my order?"}, turn]
    messages.append({"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": "shipped"})
    faithful = sandbox.httpx2_transport(bot())
    assert _ask(faithful, messages).content == "Order status: shipped."  # as the real APIs accept it
    assert faithful.journal.last.tolerated == ("echo-arguments messages[1]",)
    strict = sandbox.httpx2_transport(bot(), echo="strict")
    with pytest.raises(openai.BadRequestError, match=r"which made lookup_order\(order_id='ord_1042'\)"):
        _ask(strict, messages)
    assert strict.journal.last.error.rule is sandbox.Rule.HISTORY_MISMATCH


def test_a_function_without_an_answer_has_clear_error() -> None:
    transport = sandbox.httpx2_transport(bot())
    with pytest.raises(openai.BadRequestError) as info:
        _ask(transport, [{"role": "user", "content": "Tell me a joke"}])
    message = info.value.body["message"]  # type: ignore[index]
    assert message.startswith("sandbox: scenario 'bot' has no answer for this request: its function answer()")
    assert "the last user message is 'Tell me a joke'" in message
    assert transport.journal.last.error.rule is sandbox.Rule.NO_MATCHING_STEP


def _raises(conversation: sandbox.Conversation) -> str:
    raise ValueError("no database")


@pytest.mark.parametrize(
    ("respond", "message"),
    [
        (_raises, r"its function _raises\(\) raised ValueError: no database"),
        (lambda conversation: 42, r"returned 42; return a sandbox.Step"),
        (lambda conversation: Step(calls=[Call("refund")]), r"calls \['refund'\], which are not among its tools"),
    ],
    ids=["raises", "returns-nonsense", "unknown-tool"],
)
def test_a_failing_function_has_clear_error(respond: Any, message: str) -> None:
    transport = sandbox.httpx2_transport(bot(respond))
    with pytest.raises(openai.BadRequestError, match=message):
        _ask(transport, [{"role": "user", "content": "my order?"}])
    assert transport.journal.last.error.rule is sandbox.Rule.SCENARIO_ERROR


def test_respond_has_clear_error() -> None:
    with pytest.raises(sandbox.ScenarioError, match=r"respond= takes a function of the conversation and replaces"):
        Scenario("x", steps=[Step(text="hi")], respond=answer)
    with pytest.raises(sandbox.ScenarioError, match=r"has no steps: add at least one answer step, or respond="):
        Scenario("x")
