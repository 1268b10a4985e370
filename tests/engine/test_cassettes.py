"""`sandbox import`: vcrpy / pytest-recording cassettes of the four wire formats become scenarios.

The cassettes are built here by hand, shaped as real ones are (see /reference/real-recordings.md):
- Chat, `parsed_body` bodies and `{code, message}` statuses: pydantic-ai
  `tests/models/cassettes/test_openai/test_openai_tool_output.yaml` (gpt-4o, ends on a call);
- Chat streamed, vcrpy's `body: {string: ...}` holding the SSE text: pydantic-ai
  `test_openai/test_run_stream_sync_streams_real_model.yaml`;
- Anthropic, `body: {type: json, content}` and a bare status: pydantic-ai
  `test_anthropic/test_multiple_parallel_tool_calls.yaml` (parallel `tool_use`, then the answer);
- Gemini, vcrpy's default string bodies and a `key=` in the URI: pydantic-ai
  `test_google/test_google_instructions_only_with_tool_calls.yaml` (parallel `functionCall`s);
- Responses: pydantic-ai `test_openai_responses/test_openai_responses_model_retry.yaml` (`function_call` items).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import sandbox
from sandbox import skyl
from sandbox.cli import main
from sandbox.engine._cassettes import read_cassette, scenario_name
from sandbox.engine._recorded import Recording, scenarios_from

KEY = "AIzaSy-not-a-real-key-0042"

CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user_country",
            "description": "",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    }
]


def _chat_request(*extra: dict[str, Any], stream: bool = False) -> dict[str, Any]:
    messages = [{"role": "user", "content": "What is the largest city in the user country?"}, *extra]
    return {"model": "gpt-4o", "messages": messages, "tools": CHAT_TOOLS, "stream": stream}


CALL = {"id": "call_55Y1MexM7u2PSyLKUqMvO1o0", "type": "function"}
CALL_FUNCTION = {"name": "get_user_country", "arguments": "{}"}


def _chat_answer(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-D3aUtEhMCiguYuWihRuozlPfUWEdi",
        "object": "chat.completion",
        "created": 1769747651,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": message}],
        "usage": {"prompt_tokens": 68, "completion_tokens": 11, "total_tokens": 79},
    }


def chat_cassette() -> dict[str, Any]:
    called = {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": CALL_FUNCTION}]}
    result = {"role": "tool", "tool_call_id": CALL["id"], "content": "Mexico"}
    answered = {"role": "assistant", "content": "Mexico City is the largest city in Mexico.", "refusal": None}
    headers = {"authorization": ["Bearer sk-not-a-real-key"], "cookie": ["__cf_bm=secret-cookie"]}
    return {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "headers": headers,
                    "parsed_body": _chat_request(),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {},
                    "parsed_body": _chat_answer(called, "tool_calls"),
                },
            },
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "headers": headers,
                    "parsed_body": _chat_request(called, result),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {},
                    "parsed_body": _chat_answer(answered, "stop"),
                },
            },
        ],
        "version": 1,
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
        "object": "chat.completion.chunk",
        "created": 1782955817,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def chat_stream_cassette() -> dict[str, Any]:
    calling = "".join(
        [
            _chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"index": 0, **CALL, "function": {"name": "get_user_country", "arguments": ""}}],
                }
            ),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
            _chunk({}, "tool_calls"),
            "data: [DONE]\n\n",
        ]
    )
    answering = "".join(
        [
            _chunk({"role": "assistant", "content": ""}),
            *(_chunk({"content": piece}) for piece in ["Mexico City", " is the largest", " city {in} Mexico."]),
            _chunk({}, "stop"),
            "data: [DONE]\n\n",
        ]
    )
    called = {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": CALL_FUNCTION}]}
    result = {"role": "tool", "tool_call_id": CALL["id"], "content": "Mexico"}
    sse = {"content-type": ["text/event-stream; charset=utf-8"]}
    return {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(_chat_request(stream=True)),
                    "headers": {},
                },
                "response": {"status": {"code": 200, "message": "OK"}, "headers": sse, "body": {"string": calling}},
            },
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(_chat_request(called, result, stream=True)),
                    "headers": {},
                },
                "response": {"status": {"code": 200, "message": "OK"}, "headers": sse, "body": {"string": answering}},
            },
        ],
        "version": 1,
    }


def anthropic_cassette() -> dict[str, Any]:
    tools = [
        {
            "name": "retrieve_entity_info",
            "description": "Get the knowledge about the given entity.",
            "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        }
    ]
    user = {"role": "user", "content": [{"type": "text", "text": "Alice and Daisy are family. Who is the youngest?"}]}
    uses = [
        {
            "type": "tool_use",
            "id": f"toolu_0167cfEnoQaPviGdVXA95zc{n}",
            "name": "retrieve_entity_info",
            "input": {"name": name},
        }
        for n, name in enumerate(["Alice", "Daisy"])
    ]
    said = {"type": "text", "text": "I'll retrieve their entity information to compare their ages."}
    results = [
        {"type": "tool_result", "tool_use_id": use["id"], "content": text, "is_error": False}
        for use, text in zip(uses, ["alice is daisy's mother", "daisy is alice's daughter"], strict=True)
    ]

    def request(*messages: dict[str, Any]) -> dict[str, Any]:
        body = {"model": "claude-haiku-4-5", "max_tokens": 4096, "messages": [user, *messages], "tools": tools}
        return {
            "method": "POST",
            "uri": "https://api.anthropic.com/v1/messages?beta=true",
            "headers": {"x-api-key": ["sk-ant-not-a-real-key"]},
            "body": {"type": "json", "content": body},
        }

    def response(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        body = {
            "id": "msg_011S3wxtqL5CVescWqS3zeg2",
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": "claude-haiku-4-5-20251001",
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 423, "output_tokens": 202},
        }
        return {
            "status": 200,
            "headers": {"content-type": ["application/json"]},
            "body": {"type": "json", "content": body},
        }

    return {
        "version": 1,
        "interactions": [
            {"request": request(), "response": response([said, *uses], "tool_use")},
            {
                "request": request(
                    {"role": "assistant", "content": [said, *uses]}, {"role": "user", "content": results}
                ),
                "response": response([{"type": "text", "text": "Daisy is the youngest."}], "end_turn"),
            },
        ],
    }


def gemini_cassette() -> dict[str, Any]:
    tools = [
        {
            "functionDeclarations": [
                {"name": "generate_topic", "description": "", "parameters": {"type": "object", "properties": {}}}
            ]
        }
    ]
    user = {"role": "user", "parts": [{"text": "Tell two jokes. Generate topics with the generate_topic tool."}]}
    calls = [{"functionCall": {"name": "generate_topic", "args": {}}}] * 2
    answers = [
        {"functionResponse": {"name": "generate_topic", "response": {"return_value": topic}}}
        for topic in ("golf", "penguins")
    ]
    uri = f"https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:generateContent?key={KEY}"

    def response(parts: list[dict[str, Any]]) -> dict[str, Any]:
        body = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "modelVersion": "gemini-3-flash-preview",
            "responseId": "1CeCacWzHryxqtsPxIGRyAI",
            "usageMetadata": {"promptTokenCount": 83, "candidatesTokenCount": 30, "totalTokenCount": 113},
        }
        return {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json; charset=UTF-8"]},
            "body": {"string": json.dumps(body)},
        }

    return {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": uri,
                    "headers": {"x-goog-api-key": [KEY]},
                    "body": json.dumps({"contents": [user], "tools": tools}),
                },
                "response": response(calls),
            },
            {
                "request": {
                    "method": "POST",
                    "uri": uri,
                    "headers": {},
                    "body": json.dumps(
                        {
                            "contents": [user, {"role": "model", "parts": calls}, {"role": "user", "parts": answers}],
                            "tools": tools,
                        }
                    ),
                },
                "response": response(
                    [{"text": "Why do golfers carry two pairs of trousers? In case of a hole in one."}]
                ),
            },
        ],
        "version": 1,
    }


def responses_cassette() -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "name": "get_location",
            "description": "",
            "parameters": {"type": "object", "properties": {"loc_name": {"type": "string"}}, "required": ["loc_name"]},
        }
    ]
    user = {"role": "user", "content": "What is the location of London and Paris?"}
    items = [
        {
            "type": "function_call",
            "id": f"fc_68477f0b40a8819cb8d55594bc2c232a00{n}",
            "call_id": f"call_{n}x7",
            "name": "get_location",
            "arguments": json.dumps({"loc_name": city}),
            "status": "completed",
        }
        for n, city in enumerate(["London", "Paris"])
    ]
    outputs = [
        {"type": "function_call_output", "call_id": item["call_id"], "output": text}
        for item, text in zip(items, ['{"lat": 51, "lng": 0}', '{"lat": 48, "lng": 2}'], strict=True)
    ]
    message = {
        "type": "message",
        "id": "msg_68477f0bb8e4819cba6d781e174d77f8",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "London: 51, 0. Paris: 48, 2.", "annotations": []}],
    }

    def response(output: list[dict[str, Any]]) -> dict[str, Any]:
        body = {
            "id": "resp_68477f0b40a8819cb8d55594bc2c232a",
            "object": "response",
            "created_at": 1749515019,
            "status": "completed",
            "model": "gpt-4o-2024-08-06",
            "output": output,
            "usage": {"input_tokens": 51, "output_tokens": 46, "total_tokens": 97},
        }
        return {"status": {"code": 200, "message": "OK"}, "headers": {}, "parsed_body": body}

    uri = "https://api.openai.com/v1/responses"
    return {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": uri,
                    "headers": {},
                    "parsed_body": {"model": "gpt-4o", "input": [user], "tools": tools},
                },
                "response": response(items),
            },
            {
                "request": {
                    "method": "POST",
                    "uri": uri,
                    "headers": {},
                    "parsed_body": {"model": "gpt-4o", "input": [user, *items, *outputs], "tools": tools},
                },
                "response": response([message]),
            },
        ],
        "version": 1,
    }


CASSETTES = {
    "openai": chat_cassette,
    "openai-responses": responses_cassette,
    "anthropic": anthropic_cassette,
    "gemini": gemini_cassette,
}


def _write(tmp_path: Path, name: str, cassette: dict[str, Any], *, as_json: bool = False) -> Path:
    path = tmp_path / f"{name}.{'json' if as_json else 'yaml'}"
    path.write_text(json.dumps(cassette) if as_json else yaml.safe_dump(cassette, sort_keys=False))
    return path


def _replay(provider: str, scenario: sandbox.Scenario, run: dict[str, str]) -> skyl.Response:
    """The lesson's loop on `scenario`, each call answered from `run` by tool name."""
    client = skyl.Client(provider, transport=sandbox.transport(scenario))
    request = skyl.Request(model="any", messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))
    for _ in range(5):
        response = client.complete(request)
        if not response.tool_calls():
            return response
        request.messages.append(response.message)
        for call in response.tool_calls():
            request.messages.append(skyl.tool_result_message(call.id, run[call.name]))
    raise AssertionError("the loop did not finish")


def test_every_wire_format_imports_to_a_scenario_that_replays(provider: str, tmp_path: Path) -> None:
    cassette = CASSETTES[provider]()
    path = _write(tmp_path, f"test_{provider}[auto]", cassette)
    [(name, text)] = scenarios_from(read_cassette(path), name=scenario_name(path), source=path.name)
    assert name == f"test_{provider}_auto"
    (tmp_path / "out.toml").write_text(text)
    scenario = sandbox.load_scenario(tmp_path / "out.toml")
    assert len(scenario.steps[0].calls) >= 1 and scenario.tool_outputs, text
    run = {key.partition("(")[0]: output for key, output in scenario.tool_outputs.items()}
    answer = _replay(provider, scenario, run)
    assert answer.text() == scenario.steps[-1].text.replace("{{", "{").replace("}}", "}")
    assert answer.text() not in ("", "(the recording ended here)")


def test_secrets_in_a_cassette_never_reach_the_scenario(tmp_path: Path) -> None:
    texts = []
    for provider, build in CASSETTES.items():
        [(_, text)] = scenarios_from(read_cassette(_write(tmp_path, provider, build())), name="x", source="c.yaml")
        texts.append(text)
    written = "\n".join(texts)
    for secret in (KEY, "sk-not-a-real-key", "sk-ant-not-a-real-key", "secret-cookie"):
        assert secret not in written


def test_a_streamed_answer_imports_like_a_plain_one_from_yaml_or_json(tmp_path: Path) -> None:
    found = []
    for as_json in (False, True):
        path = _write(tmp_path, "streamed", chat_stream_cassette(), as_json=as_json)
        [(_, text)] = scenarios_from(read_cassette(path), name="streamed", source="a cassette")
        found.append(text)
    assert found[0] == found[1]
    (tmp_path / "streamed.toml").write_text(found[0])
    scenario = sandbox.load_scenario(tmp_path / "streamed.toml")
    assert [call.name for call in scenario.steps[0].calls] == ["get_user_country"]
    assert (
        _replay("openai", scenario, {"get_user_country": "Mexico"}).text()
        == "Mexico City is the largest city {in} Mexico."
    )


def test_a_recording_that_ends_on_a_call_gets_a_last_step_that_says_so(tmp_path: Path) -> None:
    cassette = chat_cassette()
    cassette["interactions"] = cassette["interactions"][:1]
    [(_, text)] = scenarios_from(read_cassette(_write(tmp_path, "c", cassette)), name="cut_short", source="c.yaml")
    assert "# The recording ended before the model's final answer" in text
    assert text.rstrip().endswith('text = "(the recording ended here)"')


def test_sandbox_import_writes_one_scenario_per_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_write(tmp_path, f"test_{name}", build()) for name, build in CASSETTES.items()]
    assert main(["import", *map(str, paths), "--out", str(tmp_path)]) == 0
    assert sorted(path.name for path in tmp_path.glob("*.toml")) == [
        "test_anthropic.toml",
        "test_gemini.toml",
        "test_openai-responses.toml",
        "test_openai.toml",
    ]
    assert f"{paths[0]} -> {tmp_path / 'test_openai.toml'}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("interactions: 3\n", "not a vcrpy cassette: it has no `interactions` list"),
        ("{not json", "not valid JSON"),
        ("interactions:\n- request: {uri: x}\n  response: {}\n", "interaction 0: its response has no status code"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_a_bad_cassette_has_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, error: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    assert main(["import", str(path), "--out", str(tmp_path)]) == 2
    assert error in capsys.readouterr().err


def _recorded_from(engine: sandbox.Engine, provider: str) -> list[Recording]:
    """The lesson's loop on `single_call` through `engine`, streamed, its exchanges as a recorder keeps them."""
    transport = sandbox.transport(engine=engine)
    client = skyl.Client(provider, transport=transport)
    request = skyl.Request(model="single_call", messages=[skyl.user_text("Weather?")], tools=TOOLS_SINGLE)
    for _ in range(4):
        try:
            response = skyl.collect_stream(client.stream(request))
        except sandbox.ProviderError:
            continue  # the loop retries, as a loop facing a fault does
        if not response.tool_calls():
            break
        request.messages.append(response.message)
        request.messages.extend(skyl.tool_result_message(c.id, "18C") for c in response.tool_calls())
    return [
        Recording(e.method, e.path, e.status, e.request_body, e.body, content_type=e.headers.get("content-type", ""))
        for e in transport.journal
    ]


TOOLS_SINGLE = list(sandbox.get_scenario("single_call").tools)


@pytest.mark.parametrize(("kind", "provider"), [("stream_error", "anthropic"), ("truncated", "openai")])
def test_a_broken_stream_becomes_the_fault_that_broke_it(kind: str, provider: str) -> None:
    recordings = _recorded_from(sandbox.Engine(faults=f"{kind}@2"), provider)
    [(_, text)] = scenarios_from(recordings, name="broken", source="a test")
    assert f'[[faults]]\nkind = "{kind}"\nrequest = 2\n' in text
    assert "sandbox.Fault" not in text


def test_a_gemini_stream_without_alt_sse_reads_as_one_json_array() -> None:
    engine = sandbox.Engine("plain_text")
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    path = "/v1beta/models/plain_text:streamGenerateContent"
    exchange = engine.handle("POST", path, body, query="")  # no alt=sse: the real API answers a JSON array
    assert exchange.body.startswith(b"[")
    [(_, text)] = scenarios_from(
        [Recording("POST", path, 200, body, exchange.body, content_type="application/json")], name="g", source="t"
    )
    assert 'text = "Hello! No tools needed for that."' in text


def test_tools_declared_later_or_never_are_declared_in_the_scenario(tmp_path: Path) -> None:
    cassette = chat_cassette()
    second = cassette["interactions"][1]
    extra = {"type": "function", "function": {"name": "get_city", "parameters": {"type": "object"}}}
    second["request"]["parsed_body"]["tools"] = [*CHAT_TOOLS, extra]
    call = {"id": "call_2", "type": "function", "function": {"name": "escalate", "arguments": "{}"}}
    second["response"]["parsed_body"]["choices"][0]["message"] = {"role": "assistant", "tool_calls": [call]}
    [(_, text)] = scenarios_from(read_cassette(_write(tmp_path, "c", cassette)), name="later", source="c.yaml")
    (tmp_path / "later.toml").write_text(text)
    scenario = sandbox.load_scenario(tmp_path / "later.toml")
    assert [tool.name for tool in scenario.tools] == ["get_user_country", "get_city", "escalate"]
    assert "# The model called tools no request declared (escalate): declared here." in text
