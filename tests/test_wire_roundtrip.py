"""For any neutral conversation, the client's encoding read back by the fake keeps every call and
result, in order: the property that lets one engine serve all four wire formats."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from sandbox import PROVIDERS, skyl
from sandbox import strategies as sst
from sandbox.wire import get_wire_format, route

# Providers whose wire format has no is_error flag for a tool result (OpenAI Chat and Responses).
_ERROR_FLAG = {"anthropic", "gemini"}


def _calls(messages: list[skyl.Message], *, ids: bool) -> list[tuple[object, ...]]:
    return [
        ((call.id,) if ids else ()) + (call.name, dict(call.arguments))
        for message in messages
        for call in message.tool_calls()
    ]


def _results(messages: list[skyl.Message], *, flag: bool) -> list[tuple[object, ...]]:
    names = {call.id: call.name for message in messages for call in message.tool_calls()}
    return [
        (names[result.call_id], result.content) + ((result.is_error,) if flag else ())
        for message in messages
        for result in message.tool_results()
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=60, deadline=None)
@given(request=sst.requests())
def test_encode_then_parse_keeps_every_call_and_result_in_order(provider: str, request: skyl.Request) -> None:
    wire = get_wire_format(provider)
    encoded = wire.encode_request(request, stream=False, api_key="key")
    found = route(encoded.path.split("?")[0])
    assert found is not None and found.provider == provider
    conversation = wire.parse_request(
        json.dumps(encoded.json).encode(), path_model=found.model, path_stream=found.stream
    )
    sent, got = request.messages, conversation.messages
    assert _calls(got, ids=wire.has_call_ids) == _calls(sent, ids=wire.has_call_ids)
    assert _results(got, flag=provider in _ERROR_FLAG) == _results(sent, flag=provider in _ERROR_FLAG)
    assert [m.text() for m in got if m.role == "user"] == [m.text() for m in sent if m.role == "user"]
