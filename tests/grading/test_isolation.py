"""The pieces between the grader and a learner's worker: values and errors as data, the loopback endpoint."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sandbox import skyl
from sandbox.grading.boundary._endpoint import TOOLS_PATH, Endpoint
from sandbox.grading.boundary._marshal import RemoteError, error_from_data, error_to_data, read_value, to_data
from sandbox.grading.learner._loopback import Connections


def test_skyl_values_travel_as_data_and_come_back_equal() -> None:
    call = skyl.ToolCall("call_1", "get_weather", {"city": "Paris"}, meta={"item": "fc_1"})
    response = skyl.Response(skyl.Message("assistant", [skyl.Text("hi"), call]), skyl.StopReason.TOOL_USE)
    request = skyl.Request(model="m", messages=[skyl.user_text("q"), response.message], tools=[skyl.Tool("t")])
    for value in (response, request, {"call_1": "18C"}, [1, 2.5, None, "x"], (1, "two")):
        assert read_value(json.loads(json.dumps(to_data(value)))) == value
    assert read_value(to_data(response)).tool_calls()[0].meta == {"item": "fc_1"}


def test_anything_else_comes_back_printing_as_it_did() -> None:
    class Strange:
        def __repr__(self) -> str:
            return "<strange>"

    value = read_value(to_data(Strange()))
    assert (type(value).__name__, repr(value)) == ("Strange", "<strange>")
    forged = read_value({"$": "Response", "fields": {"message": "not a message"}})
    assert repr(forged) == "<a Response the grader could not rebuild>"


def test_an_error_keeps_its_name_message_builtin_base_frames_and_cause(tmp_path: Path) -> None:
    source = tmp_path / "learner.py"
    source.write_text("def fail():\n    raise KeyError('get_time')\n")
    namespace: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    try:
        try:
            namespace["fail"]()
        except KeyError as inner:
            raise json.JSONDecodeError("Expecting value", "x", 0) from inner
    except ValueError as outer:
        data = error_to_data(outer, source, lambda error: {"tool": isinstance(error, KeyError)})
    error = error_from_data(json.loads(json.dumps(data)))
    assert isinstance(error, RemoteError) and isinstance(error, ValueError)
    assert (type(error).__name__, type(error).__module__) == ("JSONDecodeError", "json.decoder")
    cause = error.__cause__
    assert isinstance(cause, KeyError) and str(cause) == "'get_time'" and cause.flags == {"tool": True}
    assert [(frame.name, frame.line) for frame in cause.frames] == [("fail", "raise KeyError('get_time')")]


class _Door:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def model(self, method: str, path: str, body: bytes, query: str) -> tuple[int, Mapping[str, str], bytes]:
        self.bodies.append(body)
        return 200, {"content-type": "application/json"}, json.dumps({"path": path, "query": query}).encode()

    async def tool(self, payload: Any) -> Mapping[str, Any]:
        return {"output": f"ran {payload['call']}"}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    started = Endpoint()
    yield started
    started.close()


def test_the_endpoint_serves_a_door_under_its_token_only(endpoint: Endpoint) -> None:
    door = _Door()
    base = endpoint.open(door)
    connections = Connections(base)
    token = base.rsplit("/", 1)[-1]
    status, _, content = connections.exchange("POST", f"/{token}/v1/chat/completions?x=1", [], b'{"a":1}')
    answer = {"path": "/v1/chat/completions", "query": "x=1"}
    assert (status, json.loads(content), door.bodies) == (200, answer, [b'{"a":1}'])
    assert connections.post_json(f"/{token}{TOOLS_PATH}", {"call": "x"}) == {"output": "ran x"}
    endpoint.close_door(base)
    status, _, _ = connections.exchange("POST", f"/{token}/v1/chat/completions", [], b"{}")
    assert status == 404, "a closed door answers nothing"
    connections.close()


def test_the_endpoint_reads_a_chunked_body(endpoint: Endpoint) -> None:
    door = _Door()
    token = endpoint.open(door).rsplit("/", 1)[-1]
    with socket.create_connection(("127.0.0.1", endpoint.port)) as connection:
        head = f"POST /{token}/v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
        connection.sendall(head.encode() + b'3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n')
        answer = connection.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200 OK") and door.bodies == [b'{"a":1}']
