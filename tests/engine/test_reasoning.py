"""Reasoning models: the whole turn travels back, or the provider refuses the next request.

Each echo rule is checked through the engine with the provider's verbatim status and text (the
sources are cited beside each text in the wire modules), and the skyl model is checked to carry
reasoning unchanged through every wire format, streamed or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import sandbox
from sandbox import Engine, skyl
from sandbox.engine._tolerance import Echo
from sandbox.wire import Rule, get_wire_format
from tests.conftest import scenario_request, scripted_run

REASONING_PROVIDERS = ["openai-responses", "anthropic", "gemini"]
SCENARIO = "multi_step_reasoning"

RESPONSES_DROPPED = "Item '{item}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
RESPONSES_DANGLING = "Item '{rs}' of type 'reasoning' was provided without its required following item."
RESPONSES_FORGED = (
    "The encrypted content for item {rs} could not be verified. Reason: Encrypted content could not be decrypted "
    "or parsed."
)
ANTHROPIC_DROPPED = (
    "messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` "
    "is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
    "this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
ANTHROPIC_DISABLED = (
    "messages.{n}.content.0: When thinking is disabled, an `assistant` message in the final position cannot "
    "contain `thinking`. To use thinking blocks, enable `thinking` in your request."
)
ANTHROPIC_FORGED = "messages.{n}.content.0: Invalid `signature` in `thinking` block"


def _request(provider: str, *, reasoning: bool = True) -> skyl.Request:
    request = scenario_request(SCENARIO)
    request.reasoning = reasoning
    return request


def _send(engine: Engine, provider: str, request: skyl.Request, *, stream: bool = False) -> sandbox.Exchange:
    wire = get_wire_format(provider)
    encoded = wire.encode_request(request, stream=stream, api_key=None)
    path = encoded.path if encoded.path.startswith("/v1") else "/v1" + encoded.path
    return engine.handle("POST", path.split("?")[0], json.dumps(encoded.json).encode())


def _answer(provider: str, exchange: sandbox.Exchange) -> skyl.Response:
    assert exchange.status == 200, exchange.body.decode()
    return get_wire_format(provider).decode_response(json.loads(exchange.body))


def _first_round(
    provider: str, *, reasoning: bool = True, echo: Echo = "faithful"
) -> tuple[Engine, skyl.Request, skyl.Response]:
    engine = Engine(echo=echo)
    request = _request(provider, reasoning=reasoning)
    response = _answer(provider, _send(engine, provider, request))
    return engine, request, response


def _round_trip(
    provider: str, rebuild: Callable[[skyl.Response], skyl.Message], *, reasoning: bool = True, echo: Echo = "faithful"
) -> sandbox.Exchange:
    """Play the first turn, append `rebuild(response)` and its results, and send the next request."""
    engine, request, response = _first_round(provider, reasoning=reasoning, echo=echo)
    request.messages.append(rebuild(response))
    run = scripted_run(SCENARIO)
    request.messages += [skyl.tool_result_message(call.id, run(call)) for call in response.tool_calls()]
    return _send(engine, provider, request)


def _calls_only(response: skyl.Response) -> skyl.Message:
    return skyl.Message("assistant", response.tool_calls())


def _error(exchange: sandbox.Exchange) -> dict[str, Any]:
    body = json.loads(exchange.body)
    error: dict[str, Any] = body["error"]
    return error


# -- the skyl model ------------------------------------------------------------------------------------


def test_reasoning_part_cannot_be_written_by_hand() -> None:
    with pytest.raises(skyl.UsageError, match="append resp.message itself"):
        skyl.Reasoning("anthropic", "I think I should call the tool")


def test_reasoning_part_reads_like_the_call_and_hides_its_payload() -> None:
    part = skyl.Reasoning.from_wire("anthropic", {"type": "thinking", "thinking": "hm", "signature": "x"}, summary="hm")
    assert repr(part) == "Reasoning(provider='anthropic', summary='hm', redacted=False)"
    assert part.kind == "reasoning"
    copy = part.data()
    copy["signature"] = "forged"
    assert part.data()["signature"] == "x"


def test_reasoning_belongs_to_the_assistant_turn_only() -> None:
    part = skyl.Reasoning.from_wire("anthropic", {"type": "redacted_thinking", "data": "x"}, redacted=True)
    with pytest.raises(skyl.UsageError, match="only the model's own turn"):
        skyl.Message("user", [part])


@pytest.mark.parametrize("provider", REASONING_PROVIDERS)
def test_response_text_leaves_reasoning_out(provider: str) -> None:
    _, _, response = _first_round(provider)
    final = skyl.Message("assistant", [*response.message.reasoning(), skyl.Text("Done.")])
    assert final.text() == "Done."
    assert response.text() == "" and response.message.reasoning()


@pytest.mark.parametrize(
    ("sender", "receiver"), [("anthropic", "gemini"), ("gemini", "openai-responses"), ("openai-responses", "openai")]
)
def test_reasoning_goes_back_only_to_its_own_provider(sender: str, receiver: str) -> None:
    _, request, response = _first_round(sender)
    request.messages.append(response.message)
    with pytest.raises(skyl.UsageError, match=f"provider={sender!r}.*keep one provider"):
        get_wire_format(receiver).encode_request(request, stream=False, api_key=None)


def test_catalogue_has_a_reasoning_variant_of_each_tool_scenario() -> None:
    scenarios = sandbox.catalogue()
    for name, scenario in scenarios.items():
        if any(step.calls for step in scenario.steps) and not scenario.reasoning:
            assert scenarios[f"{name}_reasoning"].reasoning, name
    assert not scenarios["plain_text"].reasoning and "plain_text_reasoning" not in scenarios
    assert any(step.redacted_thinking for step in scenarios[SCENARIO].steps)


# -- the loop that keeps the whole turn passes, on every format, streamed or not --------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("provider", [*REASONING_PROVIDERS, "openai"])
def test_appending_resp_message_round_trips_reasoning(provider: str, stream: bool) -> None:
    client = skyl.Client(provider=provider, transport=sandbox.transport())
    request = _request(provider)
    run = scripted_run(SCENARIO)
    kinds = []
    for _ in range(5):
        response = skyl.collect_stream(client.stream(request)) if stream else client.complete(request)
        kinds.append([part.kind for part in response.message.content])
        if not response.tool_calls():
            break
        request.messages.append(response.message)
        request.messages += [skyl.tool_result_message(call.id, run(call)) for call in response.tool_calls()]
    assert response.text() == 'Done: "Le Bouchon, 4.7 stars"; "available"; "confirmed, ref LB-2041".'
    if provider == "openai":
        assert all("reasoning" not in turn for turn in kinds)  # Chat Completions keeps its reasoning to itself
    else:
        assert all(turn[0] == "reasoning" for turn in kinds[:3]), kinds


@pytest.mark.parametrize("provider", REASONING_PROVIDERS)
def test_stream_and_complete_carry_the_same_reasoning(provider: str) -> None:
    client = skyl.Client(provider=provider, transport=sandbox.transport())
    streamed = skyl.collect_stream(client.stream(_request(provider)))
    completed = client.complete(_request(provider))
    assert streamed.message.reasoning() == completed.message.reasoning()
    assert [part.data() for part in streamed.message.reasoning()] == [
        part.data() for part in completed.message.reasoning()
    ]


@pytest.mark.parametrize("provider", REASONING_PROVIDERS)
def test_reasoning_stream_events_come_before_the_calls(provider: str) -> None:
    client = skyl.Client(provider=provider, transport=sandbox.transport())
    events = list(client.stream(_request(provider)))
    kinds = [event.kind for event in events]
    assert kinds.index("reasoning_end") < kinds.index("tool_call_start")
    thought = "".join(event.text for event in events if isinstance(event, skyl.ReasoningDelta))
    assert thought.startswith("The user wants a bistro in Lyon")


def test_signatures_are_deterministic_and_differ_per_turn() -> None:
    first = _first_round("anthropic")[2].message.reasoning()[0].data()
    again = _first_round("anthropic")[2].message.reasoning()[0].data()
    assert first == again
    other = Engine("single_call_reasoning")
    request = scenario_request("single_call_reasoning")
    request.reasoning = True
    elsewhere = _answer("anthropic", _send(other, "anthropic", request)).message.reasoning()[0].data()
    assert elsewhere["signature"] != first["signature"]


# -- OpenAI Responses ----------------------------------------------------------------------------------


def test_responses_reasoning_item_has_summary_only_when_asked_and_encrypted_content() -> None:
    asked = _first_round("openai-responses")[2].message.reasoning()[0]
    quiet = _first_round("openai-responses", reasoning=False)[2].message.reasoning()[0]
    assert asked.summary.startswith("The user wants") and asked.data()["summary"][0]["type"] == "summary_text"
    assert quiet.summary == "" and quiet.data()["summary"] == []
    assert quiet.data()["id"].startswith("rs_") and quiet.data()["encrypted_content"].startswith("gAAAAAB")


def test_responses_refuses_calls_sent_back_without_their_reasoning() -> None:
    exchange = _round_trip("openai-responses", _calls_only)
    request = json.loads(exchange.request_body)
    item, rs = request["input"][1]["id"], "rs_" + exchange.error.message.rsplit("'rs_", 1)[1][:-2]
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange) == {
        "message": RESPONSES_DROPPED.format(item=item, rs=rs),
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_responses_refuses_reasoning_sent_back_without_what_followed_it() -> None:
    engine, request, response = _first_round("openai-responses")
    request.messages += [skyl.Message("assistant", response.message.reasoning()), skyl.user_text("Go on.")]
    exchange = _send(engine, "openai-responses", request)
    rs = response.message.reasoning()[0].data()["id"]
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange) == {
        "message": RESPONSES_DANGLING.format(rs=rs),
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def _forge(response: skyl.Response, change: Callable[[dict[str, Any]], None]) -> skyl.Message:
    parts: list[skyl.Part] = []
    for part in response.message.content:
        if isinstance(part, skyl.Reasoning):
            data = part.data()
            change(data)
            part = skyl.Reasoning.from_wire(part.provider, data, summary=part.summary)
        parts.append(part)
    return skyl.Message("assistant", parts)


def test_responses_refuses_encrypted_content_it_did_not_issue() -> None:
    def tamper(item: dict[str, Any]) -> None:
        item["encrypted_content"] = item["encrypted_content"][:-8] + "AAAAAAA="

    exchange = _round_trip("openai-responses", lambda response: _forge(response, tamper))
    rs = json.loads(exchange.request_body)["input"][1]["id"]
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_INVALID
    assert _error(exchange) == {
        "message": RESPONSES_FORGED.format(rs=rs),
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_encrypted_content",
    }


def test_responses_does_not_know_a_reasoning_item_it_never_sent() -> None:
    def rename(item: dict[str, Any]) -> None:
        item["id"] = "rs_0123"
        del item["encrypted_content"]

    exchange = _round_trip("openai-responses", lambda response: _forge(response, rename))
    assert exchange.status == 404 and exchange.error.rule is Rule.REASONING_INVALID
    assert _error(exchange)["message"] == "Item with id 'rs_0123' not found."


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda item: item.update(encrypted_content=7),
            "Invalid type for 'input[1].encrypted_content': expected a string",
        ),
        (lambda item: item.pop("summary"), "Missing required parameter: 'input[1].summary'."),
        (lambda item: item.update(id="msg_1"), "Invalid 'input[1].id': 'msg_1'. Expected an ID that begins with 'rs'."),
    ],
    ids=["encrypted-content-type", "no-summary", "id-prefix"],
)
def test_responses_reasoning_item_has_clear_errors(change: Callable[[dict[str, Any]], None], message: str) -> None:
    exchange = _round_trip("openai-responses", lambda response: _forge(response, change))
    assert exchange.status == 400 and exchange.error.rule is Rule.MALFORMED
    assert _error(exchange)["message"].startswith(message)


def _bare(response: skyl.Response) -> skyl.Message:
    return skyl.Message("assistant", [skyl.ToolCall(c.id, c.name, dict(c.arguments)) for c in response.tool_calls()])


def test_responses_items_without_ids_get_the_sandbox_explanation_in_the_strict_echo() -> None:
    exchange = _round_trip("openai-responses", _bare, echo="strict")
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange)["message"].startswith("sandbox: input[1] is the model's turn without its reasoning item")


def test_responses_items_without_ids_are_answered_and_flagged_as_the_api_accepts_them() -> None:
    exchange = _round_trip("openai-responses", _bare)
    assert exchange.status == 200
    assert exchange.headers["x-sandbox-tolerated"] == "reasoning-dropped input[1]"


# -- Anthropic -----------------------------------------------------------------------------------------


def test_anthropic_thinks_only_when_the_request_enables_thinking() -> None:
    assert _first_round("anthropic", reasoning=False)[2].message.reasoning() == []
    thinking = _first_round("anthropic")[2].message.reasoning()
    assert [part.data()["type"] for part in thinking] == ["thinking"]
    assert thinking[0].summary.startswith("The user wants a bistro")


def test_anthropic_sends_a_redacted_thinking_block_where_the_scenario_says() -> None:
    client = skyl.Client(provider="anthropic", transport=sandbox.transport())
    request = _request("anthropic")
    run = scripted_run(SCENARIO)
    response = client.complete(request)
    request.messages += [response.message, *(skyl.tool_result_message(c.id, run(c)) for c in response.tool_calls())]
    second = client.complete(request).message.reasoning()
    assert [(part.data()["type"], part.redacted, part.summary) for part in second][1] == ("redacted_thinking", True, "")


def test_anthropic_refuses_a_final_turn_that_lost_its_thinking() -> None:
    exchange = _round_trip("anthropic", _calls_only)
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange) == {"type": "invalid_request_error", "message": ANTHROPIC_DROPPED.format(n=1)}


def test_anthropic_refuses_thinking_sent_with_thinking_disabled() -> None:
    engine, request, response = _first_round("anthropic")
    request.messages.append(response.message)
    run = scripted_run(SCENARIO)
    request.messages += [skyl.tool_result_message(call.id, run(call)) for call in response.tool_calls()]
    request.reasoning = False
    exchange = _send(engine, "anthropic", request)
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_INVALID
    assert _error(exchange)["message"] == ANTHROPIC_DISABLED.format(n=1)


@pytest.mark.parametrize(
    "change",
    [
        lambda block: block.update(signature=block["signature"][:-6] + "AAAAA="),
        lambda block: block.update(thinking=block["thinking"] + " And I am sure."),
    ],
    ids=["signature", "edited-thinking"],
)
def test_anthropic_refuses_a_signature_it_did_not_issue(change: Callable[[dict[str, Any]], None]) -> None:
    exchange = _round_trip("anthropic", lambda response: _forge(response, change))
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_INVALID
    assert _error(exchange)["message"] == ANTHROPIC_FORGED.format(n=1)


def test_anthropic_refuses_redacted_thinking_it_did_not_issue() -> None:
    client = skyl.Client(provider="anthropic", transport=sandbox.transport())
    request = _request("anthropic")
    run = scripted_run(SCENARIO)
    first = client.complete(request)
    request.messages += [first.message, *(skyl.tool_result_message(c.id, run(c)) for c in first.tool_calls())]
    second = client.complete(request)

    def forge(block: dict[str, Any]) -> None:
        if block["type"] == "redacted_thinking":
            block["data"] = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"

    request.messages += [_forge(second, forge), *(skyl.tool_result_message(c.id, run(c)) for c in second.tool_calls())]
    with pytest.raises(skyl.ProviderError) as caught:
        client.complete(request)
    assert caught.value.message == "messages.3.content.1: Invalid `data` in `redacted_thinking` block"


def _second_turn_without_redacted(echo: Echo) -> sandbox.Exchange:
    """Play to the turn with a redacted block, send it back with its thinking block alone."""
    engine, request, first = _first_round("anthropic", echo=echo)
    run = scripted_run(SCENARIO)
    request.messages += [first.message, *(skyl.tool_result_message(c.id, run(c)) for c in first.tool_calls())]
    second = _answer("anthropic", _send(engine, "anthropic", request))
    kept = [part for part in second.message.content if not (isinstance(part, skyl.Reasoning) and part.redacted)]
    assert len(kept) == len(second.message.content) - 1
    request.messages += [
        skyl.Message("assistant", kept),
        *(skyl.tool_result_message(c.id, run(c)) for c in second.tool_calls()),
    ]
    return _send(engine, "anthropic", request)


def test_anthropic_turn_without_its_redacted_block_is_refused_in_the_strict_echo() -> None:
    exchange = _second_turn_without_redacted("strict")
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange)["message"].startswith(
        "sandbox: messages[3] is the model's turn without its `redacted_thinking` block."
    )


def test_anthropic_turn_without_its_redacted_block_is_answered_and_flagged_in_the_faithful_echo() -> None:
    exchange = _second_turn_without_redacted("faithful")
    assert exchange.status == 200
    assert exchange.headers["x-sandbox-tolerated"] == "reasoning-dropped messages[3]"


def test_anthropic_refuses_thinking_moved_to_another_turn() -> None:
    client = skyl.Client(provider="anthropic", transport=sandbox.transport())
    request = _request("anthropic")
    run = scripted_run(SCENARIO)
    first = client.complete(request)
    request.messages += [first.message, *(skyl.tool_result_message(c.id, run(c)) for c in first.tool_calls())]
    second = client.complete(request)
    moved = skyl.Message("assistant", [*first.message.reasoning(), *second.tool_calls()])
    request.messages += [moved, *(skyl.tool_result_message(c.id, run(c)) for c in second.tool_calls())]
    with pytest.raises(skyl.ProviderError) as caught:
        client.complete(request)
    assert caught.value.status == 400 and caught.value.message == ANTHROPIC_FORGED.format(n=3)


# -- Gemini --------------------------------------------------------------------------------------------

GEMINI_DROPPED = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:find_restaurant` , position 2. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)


def test_gemini_refuses_a_call_that_lost_its_thought_signature() -> None:
    exchange = _round_trip("gemini", _calls_only)
    assert exchange.status == 400 and exchange.error.rule is Rule.REASONING_DROPPED
    assert _error(exchange) == {"code": 400, "message": GEMINI_DROPPED, "status": "INVALID_ARGUMENT"}


def test_gemini_signature_rides_on_the_first_call_only() -> None:
    engine = Engine("parallel_calls_reasoning")
    request = scenario_request("parallel_calls_reasoning")
    exchange = _send(engine, "gemini", request)
    parts = json.loads(exchange.body)["candidates"][0]["content"]["parts"]
    assert [("thoughtSignature" in part, "functionCall" in part) for part in parts] == [(True, True)] + [
        (False, True)
    ] * (len(parts) - 1)
    assert len(parts) > 1


@pytest.mark.parametrize("where", ["corrupted", "moved"])
def test_gemini_refuses_a_signature_it_did_not_issue_for_that_turn(where: str) -> None:
    client = skyl.Client(provider="gemini", transport=sandbox.transport())
    request = _request("gemini")
    run = scripted_run(SCENARIO)
    first = client.complete(request)
    request.messages += [first.message, *(skyl.tool_result_message(c.id, run(c)) for c in first.tool_calls())]
    second = client.complete(request)
    if where == "moved":
        reasoning = first.message.reasoning()
    else:
        reasoning = [skyl.Reasoning.from_wire("gemini", {"thoughtSignature": "Et8ECtwEAXLI2nyCB1jKZUE4Zx=="})]
    request.messages += [
        skyl.Message("assistant", [*reasoning, *second.tool_calls()]),
        *(skyl.tool_result_message(c.id, run(c)) for c in second.tool_calls()),
    ]
    with pytest.raises(skyl.ProviderError) as caught:
        client.complete(request)
    assert (caught.value.status, caught.value.error_type) == (400, "INVALID_ARGUMENT")
    assert caught.value.message == "Corrupted thought signature."


def test_gemini_takes_a_signature_back_in_either_base64_alphabet() -> None:
    """google-genai decodes a signature to bytes and sends it back URL-safe."""

    def urlsafe(data: dict[str, Any]) -> None:
        if "thoughtSignature" in data:
            data["thoughtSignature"] = data["thoughtSignature"].replace("+", "-").replace("/", "_")

    assert _round_trip("gemini", lambda response: _forge(response, urlsafe)).status == 200


def test_gemini_sends_thought_summaries_only_when_asked() -> None:
    quiet = [part.data() for part in _first_round("gemini", reasoning=False)[2].message.reasoning()]
    asked = _first_round("gemini")[2].message.reasoning()
    assert quiet == [{"thoughtSignature": quiet[0]["thoughtSignature"]}]
    assert asked[0].data() == {"text": asked[0].summary, "thought": True} and asked[0].summary.startswith("The user")
    assert asked[1].data() == quiet[0]


def test_gemini_thinking_stream_has_the_gemini_3_shape() -> None:
    engine = Engine()
    request = _request("gemini")
    wire = get_wire_format("gemini")
    body = json.dumps(wire.encode_request(request, stream=True, api_key=None).json).encode()
    exchange = engine.handle("POST", f"/v1beta/models/{SCENARIO}:streamGenerateContent", body)
    chunks = [json.loads(chunk.decode().removeprefix("data: ")) for chunk in exchange.chunks]
    candidates = [chunk["candidates"][0] for chunk in chunks]
    call_chunk, last = candidates[-2], candidates[-1]
    assert "thoughtSignature" in call_chunk["content"]["parts"][0] and "finishReason" not in call_chunk
    assert last["content"]["parts"] == [{"text": ""}] and last["finishReason"] == "STOP"


@pytest.mark.parametrize("provider", REASONING_PROVIDERS)
def test_replay_shows_what_a_reasoning_model_thought(provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox.cli import main

    assert main(["replay", SCENARIO, "--provider", provider]) == 0
    out = capsys.readouterr().out
    thoughts = [line for line in out.splitlines() if "think" in line.split()[:3]]
    assert len(thoughts) >= 4 and "Done after 4 request(s)" in out
    assert "The user wants a bistro in Lyon" in thoughts[0]
    if provider == "gemini":
        assert "hidden reasoning, sent back as gemini sent it" in thoughts[1]
    if provider == "anthropic":
        assert any("(redacted thinking)" in line for line in thoughts)
