"""A streamed answer's frames come from a memo of each step's frames (`sandbox.wire._frames`), the
answer's own parts (its id, its usage figures) put in per answer. What a client reads must never depend
on the memo: a frame from it is the frame a fresh memo writes, the text `dumps` writes for the frame's
object, and it carries its own answer's id, never another's; the memo stays bounded and leaves long
answers alone."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.engine._engine import Engine, Exchange
from sandbox.messages._types import Message, Reasoning, StopReason, Text, ToolCall, Usage
from sandbox.wire import Conversation, ModelTurn, get_wire_format
from sandbox.wire._frames import CONTENT_LIMIT, content_key, keep_frames
from sandbox.wire._memo import Memo
from sandbox.wire._sse import dumps, iter_sse, to_bytes
from sandbox.wire.anthropic import _encode as anthropic_encode
from sandbox.wire.gemini import _encode as gemini_encode
from sandbox.wire.openai_chat import _encode as chat_encode
from tests.corpus import play_loop

STREAMED = ("openai", "anthropic", "gemini")
MEMOS = {"openai": chat_encode._MEMO, "anthropic": anthropic_encode._MEMO, "gemini": gemini_encode._MEMO}


@pytest.fixture(autouse=True)
def _cold_memos() -> Iterator[None]:
    """Each test starts from empty memos, as a fresh process does, whatever ran before it."""
    for memo in MEMOS.values():
        memo.cache_clear()
    yield
    for memo in MEMOS.values():
        memo.cache_clear()


def _answers(engine: Engine, provider: str, name: str, *, reasoning: bool, stream: bool = True) -> list[Exchange]:
    """The answers of one tool loop of `name`, played to its end (at most 6 rounds)."""
    transport = sandbox.transport(engine=engine)
    client = skyl.Client(provider, transport=transport)
    scenario = engine.scenarios[name]
    req = skyl.Request(
        model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools), reasoning=reasoning
    )
    play_loop(client, req, stream=stream, result=lambda call: f'{call.name} \u00e9 "ok" {json.dumps(call.arguments)}')
    return [exchange for exchange in transport.journal if exchange.status == 200 and exchange.turn is not None]


def _redumped(chunk: bytes, provider: str) -> bytes:
    """The frame as `sse_frame` writes the object its data decodes to: the same bytes if the frame's
    text is the compact JSON `dumps` writes (key order is kept by `json.loads`)."""
    newline = "\r\n" if provider == "gemini" else "\n"
    (event,) = list(iter_sse([chunk]))
    data = event.data if event.data == "[DONE]" else dumps(json.loads(event.data))
    head = f"event: {event.event}{newline}" if event.event is not None else ""
    return to_bytes(f"{head}data: {data}{newline}{newline}")


@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "reasoning"])
@pytest.mark.parametrize("provider", STREAMED)
def test_stream_frames_are_what_a_cold_memo_writes_for_every_scenario(provider: str, reasoning: bool) -> None:
    """Every catalogue loop streamed twice through one memo (the second time all from it): each answer's
    frames are the ones written with the memo emptied, and each frame is the JSON text of its object."""
    wire = get_wire_format(provider)
    answered = 0
    for name in sorted(catalogue()):
        for _ in range(2):
            for exchange in _answers(Engine(), provider, name, reasoning=reasoning):
                assert exchange.turn is not None and exchange.conversation is not None
                warm = list(exchange.chunks)
                MEMOS[provider].cache_clear()
                assert wire.encode_stream(exchange.turn, exchange.conversation) == warm, (name, exchange.step)
                assert [_redumped(chunk, provider) for chunk in warm] == warm, (name, exchange.step)
                answered += 1
    assert answered > 80
    assert MEMOS[provider].cache_info() > 0  # the last answer's frames were memoised again


@pytest.mark.parametrize("provider", STREAMED)
def test_plain_answers_are_what_a_cold_memo_writes_for_every_scenario(provider: str) -> None:
    """The same for a plain answer's text around its id and usage: the body from a warm
    memo is the one written with it emptied, and the text `dumps` writes for `encode_response`."""
    wire = get_wire_format(provider)
    answered = 0
    for name in sorted(catalogue()):
        for reasoning in (False, True, False):
            for exchange in _answers(Engine(), provider, name, reasoning=reasoning, stream=False):
                assert exchange.turn is not None and exchange.conversation is not None
                MEMOS[provider].cache_clear()
                assert wire.encode_answer(exchange.turn, exchange.conversation)[0] == exchange.body, name
                expected = dumps(wire.encode_response(exchange.turn, exchange.conversation))
                assert exchange.body == to_bytes(expected), name
                answered += 1
    assert answered > 120


def _turn(text: str = "It's 18C.", *, calls: tuple[dict[str, Any], ...] = (), **fields: Any) -> ModelTurn:
    parts: list[Any] = [Text(text)] if text else []
    parts += [ToolCall(f"call_{index}", "get_weather", arguments) for index, arguments in enumerate(calls)]
    stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    return ModelTurn(Message("assistant", parts), fields.pop("stop", stop), "s/1", usage=Usage(90, 9), **fields)


VARIANTS: list[tuple[ModelTurn, dict[str, Any]]] = [
    (_turn(), {}),
    (_turn(), {"model": "other-model"}),
    (_turn(), {"raw": {"stream_options": {"include_usage": True}}}),
    (_turn(), {"raw": {"stop_sequences": ["END"]}}),
    (_turn("It's 19C."), {}),
    (_turn(calls=({"city": "Paris"},)), {}),
    (_turn(calls=({"city": "Rome"},)), {}),
    (_turn("", calls=({"city": "Paris"},)), {}),
    (_turn("", calls=({"city": "Paris"}, {"city": "Rome"})), {}),
    (_turn(calls=({"city": "Paris"},)), {"tool_choice": "required"}),
    (_turn(raw_stop_reason="length"), {}),
    (_turn(stop=StopReason.MAX_TOKENS), {}),
    (_turn(stop=StopReason.STOP_SEQUENCE), {"raw": {"stop_sequences": ["END"]}}),
    (_turn(stop=StopReason.STOP_SEQUENCE), {"raw": {"stop_sequences": ["DONE"]}}),
    (_turn(), {"model": 'caf\u00e9 "q"'}),
]
"""Turns and requests that differ in one thing each frame is written from."""


@pytest.mark.parametrize("provider", STREAMED)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "plain"])
def test_answers_of_a_warm_memo_follow_every_input(provider: str, stream: bool) -> None:
    """Each variant answered after all the others, through one memo: its frames (or its plain body) are
    those of a cold memo. A key that left out one input (the model, the finish reason, the usage option,
    a call's arguments) would hand a variant another's frames."""
    wire = get_wire_format(provider)

    def encoded(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        if stream:
            return wire.encode_stream(turn, conversation)
        return [wire.encode_answer(turn, conversation)[0]]

    conversations = [
        Conversation(model=options.get("model", "m"), messages=[], paths=[], tool_choice=options.get("tool_choice"),
                     raw=options.get("raw", {}), stream=True)
        for _, options in VARIANTS
    ]  # fmt: skip
    cold = []
    for (turn, _), conversation in zip(VARIANTS, conversations, strict=True):
        MEMOS[provider].cache_clear()
        cold.append(encoded(turn, conversation))
    assert len({b"".join(frames) for frames in cold}) > 8  # the variants do differ on the wire
    for _ in range(2):
        for (turn, _), conversation, expected in zip(VARIANTS, conversations, cold, strict=True):
            assert encoded(turn, conversation) == expected


def _body(provider: str, prompt: str) -> tuple[str, str | None, bytes]:
    """The second request of a `single_call` loop (the final answer) for `provider` (path, query, body)."""
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    scenario = sandbox.get_scenario("single_call")
    req = skyl.Request(model="single_call", messages=[skyl.user_text(prompt)], tools=list(scenario.tools))
    resp = client.complete(req)
    req.messages += [resp.message, *(skyl.tool_result_message(call.id, "18C") for call in resp.tool_calls())]
    url, body, _ = client._prepare(req, stream=True)
    path, _, query = url.split("://", 1)[1].partition("/")[2].partition("?")
    return "/" + path, query or None, body


def _ids(exchange: Exchange, provider: str) -> list[str]:
    """The answer's id in each frame that carries one (every Chat chunk but `[DONE]`, Anthropic's
    `message_start`)."""
    events = [json.loads(event.data) for event in iter_sse(exchange.chunks) if event.data != "[DONE]"]
    if provider == "anthropic":
        return [event["message"]["id"] for event in events if event["type"] == "message_start"]
    return [event["id"] for event in events]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_two_senders_of_one_step_get_their_own_id_in_every_frame(provider: str) -> None:
    """The same request from two learners: the second answer's frames come from the memo, and carry
    the second answer's id, never the first's."""
    path, query, body = _body(provider, "What's the weather in Paris?")
    engine = Engine()
    first = engine.handle("POST", path, body, client="a", query=query)
    held = MEMOS[provider].cache_info(), MEMOS[provider].held
    second = engine.handle("POST", path, body, client="b", query=query)
    assert first.status == second.status == 200
    assert (MEMOS[provider].cache_info(), MEMOS[provider].held) == held  # the second answer's frames came from the memo
    first_ids, second_ids = _ids(first, provider), _ids(second, provider)
    assert len(set(first_ids)) == len(set(second_ids)) == 1 and first_ids[0] != second_ids[0]
    assert len(first_ids) == (len(first.chunks) - 1 if provider == "openai" else 1)
    assert first_ids[0].encode() not in b"".join(second.chunks)


def _prompt_counts(exchange: Exchange, provider: str) -> list[int]:
    """Every count of the request's tokens the frames carry (Chat's last chunk, Anthropic's start and
    delta, every Gemini chunk)."""
    events = [json.loads(event.data) for event in iter_sse(exchange.chunks) if event.data != "[DONE]"]
    if provider == "openai":
        return [event["usage"]["prompt_tokens"] for event in events if event.get("usage")]
    if provider == "anthropic":
        usages = [event.get("message", event).get("usage") for event in events]
        return [usage["input_tokens"] for usage in usages if usage]
    return [event["usageMetadata"]["promptTokenCount"] for event in events]


@pytest.mark.parametrize("provider", STREAMED)
def test_usage_of_each_answer_counts_its_own_request(provider: str) -> None:
    """Two requests of one step but of different lengths: each answer's usage counts its own request,
    not the memoised one's."""
    engine = Engine()
    exchanges, held = [], []
    for prompt in ("Weather?", "What's the weather in Paris, and in the rest of France, this week?"):
        path, query, body = _body(provider, prompt)
        exchanges.append(engine.handle("POST", path, body, client="a", query=query))
        held.append(MEMOS[provider].cache_info())
    assert held[0] == held[1]  # the second loop's answers came from the memo
    counts = []
    for exchange in exchanges:
        assert exchange.status == 200 and exchange.turn is not None
        expected = {"openai": 1, "anthropic": 2, "gemini": len(exchange.chunks)}[provider]
        assert _prompt_counts(exchange, provider) == [exchange.turn.usage.input_tokens] * expected
        counts.append(exchange.turn.usage.input_tokens)
    assert counts[0] < counts[1]


@pytest.mark.parametrize("provider", STREAMED)
def test_a_long_answer_is_not_memoised(provider: str) -> None:
    """A turn quoting a long result (here 4 MiB) is written per answer: the memo keeps nothing of it,
    and its text still arrives whole."""
    text = "x\u00e9" * (2 << 20)
    conversation = Conversation(model="m", messages=[], paths=[], stream=True)
    frames = get_wire_format(provider).encode_stream(_turn(text), conversation)
    assert MEMOS[provider].cache_info() == 0 and MEMOS[provider].held == 0
    events = [json.loads(event.data) for event in iter_sse(frames) if event.data != "[DONE]"]
    if provider == "openai":
        sent = "".join(event["choices"][0]["delta"].get("content") or "" for event in events if event["choices"])
    elif provider == "anthropic":
        sent = "".join(event["delta"].get("text", "") for event in events if event["type"] == "content_block_delta")
    else:
        sent = "".join(part["text"] for event in events for part in event["candidates"][0]["content"]["parts"])
    assert sent == text
    assert get_wire_format(provider).encode_stream(_turn("short"), conversation)
    assert MEMOS[provider].cache_info() == 1  # a short one is


def test_content_key_declines_long_or_foreign_parts() -> None:
    assert content_key([Text("a" * CONTENT_LIMIT)]) is not None
    assert content_key([Text("a" * (CONTENT_LIMIT + 1))]) is None
    assert content_key([Text("a"), ToolCall("c", "f", {"x": "a" * CONTENT_LIMIT})]) is None
    assert content_key([ToolCall("c", "f", {"x": {1, 2}})]) is None  # not JSON: the format's own error
    assert content_key([ToolCall("c", "f", {"x": 1})]) != content_key([ToolCall("c", "f", {"x": 1.0})])
    thought = Reasoning("anthropic", "hm", payload='{"type":"thinking","thinking":"hm","signature":"s"}')
    assert content_key([thought, Text("a")]) != content_key([Text("a")])


def test_content_key_of_a_lone_text_is_the_key_of_its_parts() -> None:
    """A final answer's one text is keyed without the loop, as the loop keys a text among others."""
    assert content_key([Text("ab")]) == ((("text", "ab"),), 2)
    both = content_key([Text("ab"), Text("c")])
    assert both is not None and both[0][0] == content_key([Text("ab")])[0][0]  # type: ignore[index]


def test_a_memo_hit_stands_when_another_thread_evicts_it_meanwhile() -> None:
    """`Memo.get` takes no lock: a `put` in another thread may evict the key between the lookup and
    the move to the end, and the value found is still the one the key stands for."""

    class Evicting(OrderedDict[Any, Any]):
        def move_to_end(self, key: Any, last: bool = True) -> None:
            del self[key]  # what a racing put's eviction does
            super().move_to_end(key, last)

    memo: Memo[tuple[bytes, ...]] = Memo(entries=3, max_bytes=1000, largest=400)
    memo.put("k", (b"frame",), 5)
    memo._values = Evicting(memo._values)
    assert memo.get("k") == (b"frame",)
    assert memo.get("k") is None


def test_frames_are_counted_with_their_key() -> None:
    """`keep_frames` counts an entry as its frames' bytes and its key's characters (the memo's own
    bounds are tests/wire/test_responses_memo.py's)."""
    memo: Memo[tuple[bytes, ...]] = Memo(entries=3, max_bytes=1000, largest=400)
    keep_frames(memo, "big", (b"y" * 350,), 40)  # 390 bytes with its key: kept
    keep_frames(memo, "bigger", (b"y" * 350,), 60)  # 410: over one entry's bound, not kept
    assert memo.get("big") == (b"y" * 350,) and memo.get("bigger") is None and memo.held == 390
    for index in range(3):
        keep_frames(memo, index, (b"z" * 300,), 0)
    assert memo.held <= 1000 and memo.cache_info() <= 3 and memo.get(2) == (b"z" * 300,)
