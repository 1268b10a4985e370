"""OpenAI's Conversations API: what Responses clients use of it, kept as state with the
same bounds and per-sender rules as threads and stored responses; an id the sandbox does not hold
gets OpenAI's "Conversation with id '...' not found."."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import sandbox
from tests.loopback import serving

pytestmark = pytest.mark.usefixtures("kept_store")  # each test once per backend (tests/stores.py)

TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
PROMPT = "What's the weather in Paris?"


def _in_process() -> Any:
    import httpx2
    import openai

    transport = sandbox.httpx2_transport()
    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport))  # type: ignore[arg-type]


def _loop(client: Any, conversation: str) -> Any:
    """A tool loop that lets the conversation hold the history: each request sends only what is new."""
    response = client.responses.create(model="single_call", conversation=conversation, input=PROMPT, tools=TOOLS)
    call = next(item for item in response.output if item.type == "function_call")
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "18C, clear"}
    return client.responses.create(model="single_call", conversation=conversation, input=[output], tools=TOOLS)


@pytest.mark.parametrize("door", ["in-process", "http"])
def test_a_tool_loop_in_a_conversation_sends_only_new_items(door: str) -> None:
    import openai

    if door == "http":
        with (
            serving(sandbox.Engine()) as base,
            openai.OpenAI(api_key="k", base_url=f"{base}/v1", max_retries=0) as client,
        ):
            conversation = client.conversations.create(metadata={"lesson": "1"})
            answer = _loop(client, conversation.id)
            items = list(client.conversations.items.list(conversation.id, order="asc"))
    else:
        with _in_process() as client:
            conversation = client.conversations.create(metadata={"lesson": "1"})
            answer = _loop(client, conversation.id)
            items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert conversation.id.startswith("conv_") and conversation.metadata == {"lesson": "1"}
    assert answer.output_text == 'The weather in Paris: "18C, clear".'
    assert answer.conversation is not None and answer.conversation.id == conversation.id, "says where it was added"
    kinds = [item.type for item in items]
    assert kinds[0] == "message" and items[0].content[0].text == PROMPT
    assert kinds[-3:] == ["function_call", "function_call_output", "message"]
    assert len({item.id for item in items}) == len(items), "every item has an id of its own"


def test_items_are_listed_paged_and_can_be_sent_back_as_input() -> None:
    """openai-agents' `OpenAIConversationsSession` lists the items and sends them back as `input`."""
    with _in_process() as client:
        conversation = client.conversations.create(items=[{"role": "user", "content": PROMPT}])
        first = client.responses.create(model="single_call", conversation=conversation.id, input=[], tools=TOOLS)
        page = client.conversations.items.list(conversation.id, limit=1)
        assert page.has_more and len(page.data) == 1
        everything = [
            item.model_dump(exclude_unset=True)
            for item in client.conversations.items.list(conversation.id, order="asc")
        ]
        call = next(item for item in first.output if item.type == "function_call")
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "18C, clear"}
        again = client.responses.create(model="single_call", input=[*everything, output], tools=TOOLS)
    assert again.output_text == 'The weather in Paris: "18C, clear".'


def test_items_are_added_retrieved_and_deleted_and_the_conversation_deleted() -> None:
    import openai

    with _in_process() as client:
        conversation = client.conversations.create()
        added = client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "hi"}])
        item = added.data[0]
        assert client.conversations.items.retrieve(item.id, conversation_id=conversation.id).id == item.id
        client.conversations.items.delete(item.id, conversation_id=conversation.id)
        assert list(client.conversations.items.list(conversation.id)) == []
        updated = client.conversations.update(conversation.id, metadata={"k": "v"})
        assert updated.metadata == {"k": "v"}
        assert client.conversations.delete(conversation.id).deleted
        with pytest.raises(openai.NotFoundError) as info:
            client.conversations.retrieve(conversation.id)
    message = info.value.body["message"]  # type: ignore[index]
    assert message.startswith(f"Conversation with id '{conversation.id}' not found.\n\nsandbox: ")


def test_more_than_twenty_items_at_once_are_refused() -> None:
    import openai

    with _in_process() as client, pytest.raises(openai.BadRequestError) as info:
        client.conversations.create(items=[{"role": "user", "content": str(index)} for index in range(21)])
    assert "maximum length 20" in info.value.message


def test_two_senders_of_the_same_create_get_two_conversations() -> None:
    with _in_process() as client:
        ids = {client.conversations.create(items=[{"role": "user", "content": PROMPT}]).id for _ in range(2)}
    assert len(ids) == 2


def test_over_http_another_api_key_cannot_read_a_conversation() -> None:
    with serving(sandbox.Engine()) as base, httpx.Client(base_url=base) as http:
        made = http.post("/v1/conversations", json={}, headers={"authorization": "Bearer learner-a"}).json()
        other = http.get(f"/v1/conversations/{made['id']}", headers={"authorization": "Bearer learner-b"})
        own = http.get(f"/v1/conversations/{made['id']}", headers={"authorization": "Bearer learner-a"})
    assert other.status_code == 404 and own.status_code == 200


def test_a_conversation_counts_against_the_kept_bound_and_is_forgotten_first_in_first_out() -> None:
    engine = sandbox.Engine(kept=2)
    first = engine.handle("POST", "/v1/conversations", b"{}")
    for _ in range(2):
        engine.handle("POST", "/v1/conversations", b"{}")
    conversation = first.body.decode().split('"id":"')[1].split('"')[0]
    gone = engine.handle("GET", f"/v1/conversations/{conversation}", b"")
    assert gone.status == 404 and len(engine.kept) == 2


def test_an_answer_names_its_conversation_only_when_the_request_named_one() -> None:
    """The real answer carries `conversation: {"id": ...}` for a request in a conversation (either
    spelling of the field), streamed or not; one outside a conversation has no such field."""
    with _in_process() as client:
        conversation, other = client.conversations.create(), client.conversations.create()
        named = client.responses.create(model="plain_text", conversation={"id": conversation.id}, input=PROMPT)
        with client.responses.stream(model="plain_text", conversation=other.id, input=PROMPT) as stream:
            created = next(event for event in stream if event.type == "response.created")
            streamed = stream.get_final_response()
        alone = client.responses.with_raw_response.create(model="plain_text", input=PROMPT)
    assert named.conversation is not None and named.conversation.id == conversation.id
    assert created.response.conversation is not None and created.response.conversation.id == other.id
    assert streamed.conversation is not None and streamed.conversation.id == other.id
    assert "conversation" not in alone.http_response.json()


def test_a_stored_response_and_a_conversation_at_once_are_refused_as_the_api_refuses_them() -> None:
    """Both kinds of history named in one request, each of them real and the sender's own: the API refuses
    the pair before it looks either up, rather than telling the learner that one of them was not found."""
    import openai

    with _in_process() as client:
        conversation = client.conversations.create()
        stored = client.responses.create(model="plain_text", input="hi")
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(
                model="plain_text", input="again", previous_response_id=stored.id, conversation=conversation.id
            )
    error = info.value.body
    assert isinstance(error, dict) and error["code"] == "mutually_exclusive_parameters" and error["param"] is None
    assert error["message"].startswith(
        "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'."
    )
