"""Steps chosen by content: a step's `when` picks the branch a request plays, through every official
SDK; the replay's ids and echo checks hold as in script order; a request no step meets is refused by
name, and strict expectations count only the branches that began."""

from __future__ import annotations

import re
from typing import Any

import openai
import pytest

import sandbox
from sandbox import Call, Scenario, Step, When
from sandbox.skyl import Tool
from tests.sdk_drivers import DRIVERS, in_process_options

ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}}
NONE: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [Tool("lookup_order", "Look up an order.", ORDER), Tool("cancel_subscription", "Cancel it.", NONE)]
OUTPUTS = {
    "lookup_order(order_id='ord_1042')": "ord_1042: shipped",
    "cancel_subscription()": "subscription sub_7 cancelled",
}
STEPS = [
    Step(when=When(user="order"), calls=[Call("lookup_order", {"order_id": "ord_1042"})]),
    Step(text="Your order: {last[0]}."),
    Step(when=When(user=re.compile(r"\bcancel\b", re.IGNORECASE)), calls=[Call("cancel_subscription")]),
    Step(text="Done: {last[0]}."),
]


def support(prompt: str, steps: list[Step] = STEPS) -> Scenario:
    return Scenario("support", tools=TOOLS, steps=steps, prompt=prompt, tool_outputs=OUTPUTS)


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_cancel_my_subscription_gets_the_cancel_branch(provider: str, stream: bool) -> None:
    scenario = support("Cancel my subscription")
    transport = sandbox.httpx2_transport(scenario)
    answer = DRIVERS[provider](scenario, stream=stream, **in_process_options(provider, transport))
    assert answer == "Done: subscription sub_7 cancelled."
    assert [call.name for call in transport.journal.calls()] == ["cancel_subscription"]
    assert [exchange.status for exchange in transport.journal] == [200, 200]


def test_an_order_question_gets_the_order_branch(provider: str) -> None:
    scenario = support("Where is my order?")
    transport = sandbox.httpx2_transport(scenario)
    answer = DRIVERS[provider](scenario, **in_process_options(provider, transport))
    assert "ord_1042: shipped" in answer
    transport.journal.assert_called("lookup_order", order_id="ord_1042")


def _ask(transport: sandbox.Httpx2Transport, messages: list[Any], **extra: Any) -> Any:
    import httpx2

    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport))
    tools: Any = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
    return client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools, **extra).choices[0].message


@pytest.mark.parametrize(
    ("when", "messages"),
    [
        (
            When(system="billing"),
            [{"role": "system", "content": "You are the Billing desk."}, {"role": "user", "content": "hi"}],
        ),
        (When(tool="cancel_"), [{"role": "user", "content": "hi"}]),
        (lambda conversation: len(conversation.messages) == 1, [{"role": "user", "content": "hi"}]),
    ],
    ids=["system", "tool", "predicate"],
)
def test_when_reads_the_system_prompt_tools_and_predicates(when: Any, messages: list[Any]) -> None:
    scenario = support("", [Step(when=when, calls=[Call("cancel_subscription")]), Step(text="Done.")])
    message = _ask(sandbox.httpx2_transport(scenario), messages)
    assert [call.function.name for call in message.tool_calls] == ["cancel_subscription"]


def test_when_reads_the_results_since_the_last_model_turn() -> None:
    steps = [
        Step(calls=[Call("lookup_order", {"order_id": "ord_1042"})]),
        Step(when=When(tool_result="shipped"), text="It is on its way."),
        Step(when=When(tool_result="lost"), calls=[Call("cancel_subscription")]),
        Step(text="Cancelled, sorry."),
    ]
    transport = sandbox.httpx2_transport(support("", steps))
    messages: list[Any] = [{"role": "user", "content": "Where is ord_1042?"}]
    turn = _ask(transport, messages)
    messages += [
        turn.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": "lost in transit"},
    ]
    turn = _ask(transport, messages)
    assert [call.function.name for call in turn.tool_calls] == ["cancel_subscription"]
    messages += [
        turn.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": "ok"},
    ]
    assert _ask(transport, messages).content == "Cancelled, sorry."


def test_a_request_no_step_matches_has_clear_error() -> None:
    transport = sandbox.httpx2_transport(support(""))
    with pytest.raises(openai.BadRequestError) as info:
        _ask(transport, [{"role": "user", "content": "What are your opening hours?"}])
    message = info.value.body["message"]  # type: ignore[index]
    assert message.startswith("sandbox: no step of scenario 'support' left to play matches this request.")
    assert "the last user message is 'What are your opening hours?'" in message
    assert "- step 0: when user contains 'order'\n- step 2: when user matches /\\bcancel\\b/" in message
    assert transport.journal.last.error.rule is sandbox.Rule.NO_MATCHING_STEP


def test_an_echo_of_a_chosen_step_is_checked_as_any_other() -> None:
    transport = sandbox.httpx2_transport(support(""))
    messages: list[Any] = [{"role": "user", "content": "Please cancel"}]
    turn = _ask(transport, messages).model_dump(exclude_none=True)
    turn["tool_calls"][0]["function"]["name"] = "lookup_order"
    messages += [turn, {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": "done"}]
    with pytest.raises(openai.BadRequestError, match=r"which made cancel_subscription\(\)"):
        _ask(transport, messages)
    assert transport.journal.last.error.rule is sandbox.Rule.HISTORY_MISMATCH


def test_a_failing_predicate_has_clear_error() -> None:
    def broken(conversation: sandbox.Conversation) -> bool:
        raise KeyError("plan")

    transport = sandbox.httpx2_transport(support("", [Step(when=broken, text="x")]))
    with pytest.raises(openai.BadRequestError, match=r"the when predicate of step 0 raised KeyError: 'plan'"):
        _ask(transport, [{"role": "user", "content": "hi"}])
    assert transport.journal.last.error.rule is sandbox.Rule.SCENARIO_ERROR


def test_strict_mock_counts_only_the_branches_that_began() -> None:
    with sandbox.mock(support(""), strict=True) as mounted:
        client = openai.OpenAI(api_key="sk-test", max_retries=0)
        tools: Any = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
        messages: list[Any] = [{"role": "user", "content": "cancel it"}]
        turn = client.chat.completions.create(model="x", messages=messages, tools=tools).choices[0].message
        assert mounted.unmet() == [
            "scenario 'support': step 3 of 4 never played (each follows the script's start "
            "or a step whose when matched)"
        ]
        messages.append(turn.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": "ok"})
        client.chat.completions.create(model="x", messages=messages, tools=tools)
    assert mounted.unmet() == []  # the order branch never began: an alternative, not an expectation


def test_when_in_toml() -> None:
    scenario = Scenario.from_dict(
        {
            "name": "routed",
            "tools": [{"name": "cancel_subscription"}],
            "steps": [
                {"when": {"user": {"regex": "(?i)^cancel"}}, "calls": [{"name": "cancel_subscription"}]},
                {"text": "Done."},
            ],
        }
    )
    when = scenario.steps[0].when
    assert isinstance(when, When) and str(when) == "user matches /(?i)^cancel/"


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ({"users": "x"}, r"when has unknown keys \['users'\]; use user, tool_result, system, tool"),
        ({"user": {"regex": "("}}, r"when.user.regex '\(' is not valid"),
        ({"user": ""}, r"When\(user=''\): give a non-empty string"),
        ("cancel", r"when must be a table such as \{ user = \"cancel\" \}"),
    ],
)
def test_when_in_toml_has_clear_error(when: Any, message: str) -> None:
    with pytest.raises(sandbox.ScenarioError, match=message):
        Scenario.from_dict({"name": "x", "steps": [{"when": when, "text": "hi"}]}, source="x.toml")


def test_when_has_clear_error() -> None:
    with pytest.raises(sandbox.ScenarioError, match=r"When\(\) needs at least one of user="):
        When()
    with pytest.raises(sandbox.ScenarioError, match=r"Step\(when='cancel'\): give a sandbox.When"):
        Step(when="cancel", text="x")  # type: ignore[arg-type]


def test_a_kept_responses_chain_chooses_each_branch_by_its_new_input() -> None:
    """`previous_response_id` continues a conversation the sandbox keeps: each new input still picks its
    branch, the history before it replayed from the chain."""
    import httpx2

    client = openai.OpenAI(
        api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=sandbox.httpx2_transport(support("")))
    )
    tools: Any = [{"type": "function", "name": t.name, "parameters": t.parameters, "strict": False} for t in TOOLS]
    answers = []
    previous, asked = None, [{"role": "user", "content": "Cancel my subscription"}]
    for _ in range(4):
        reply = client.responses.create(model="gpt-4o", input=asked, tools=tools, previous_response_id=previous)
        calls = [item for item in reply.output if item.type == "function_call"]
        answers.append(calls[0].name if calls else reply.output_text)
        previous = reply.id
        asked = (
            [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "done"}]
            if calls
            else [{"role": "user", "content": "And where is my order?"}]
        )
    assert answers == ["cancel_subscription", "Done: done.", "lookup_order", "Your order: done."]


def test_a_strict_mock_fails_on_a_request_no_step_matched() -> None:
    tools: Any = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
    unmatched = r"request #1 POST /v1/chat/completions matched no step: 400 no_matching_step: sandbox: no step"
    with pytest.raises(AssertionError, match=unmatched), sandbox.mock(support(""), strict=True):
        client = openai.OpenAI(api_key="sk-test", max_retries=0)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(
                model="x", messages=[{"role": "user", "content": "opening hours?"}], tools=tools
            )


def test_a_strict_mock_fails_when_no_request_reaches_a_chosen_scenario() -> None:
    for scenario in (support(""), Scenario("desk", respond=lambda conversation: "hi")):
        with pytest.raises(AssertionError, match=rf"scenario '{scenario.name}': no request reached it"):
            with sandbox.mock(scenario, strict=True):
                pass
