"""Server control: `sandbox.serving()` and its journal, the control API under `/_sandbox/` (off by
default, behind a token), per-test scopes, scenarios loaded at run time, and the `sandbox_server`
fixture."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import sandbox
from sandbox import skyl

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

TOKEN = "a-control-token-for-tests"
GREETER = """
name = "greeter"
[[steps]]
text = "Hello from a scenario loaded at run time."
"""


def _ask(url: str, model: str, scope: str | None = None) -> httpx.Response:
    headers = {"x-sandbox-scope": scope} if scope else {}
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers)


def test_serving_gives_a_url_any_client_can_use_and_the_journal_in_process() -> None:
    with sandbox.serving("single_call") as server:
        with skyl.Client("gemini", base_url=server.url) as client:
            tools = list(sandbox.get_scenario("single_call").tools)
            request = skyl.Request(model="x", messages=[skyl.user_text("Weather in Paris?")], tools=tools)
            client.complete(request)
        call = server.journal().assert_called("get_weather", city="Paris")
    assert call.name == "get_weather"
    assert server.openai_url == f"{server.url}/v1"
    with pytest.raises(httpx.ConnectError):
        _ask(server.url, "plain_text")  # the block ended: the server is gone


def test_the_control_api_is_off_unless_asked() -> None:
    with sandbox.serving() as server:
        answer = httpx.get(f"{server.url}/_sandbox/journal", headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 404
    assert server.token is None


def test_the_control_api_needs_its_token() -> None:
    with sandbox.serving(control=True, token=TOKEN) as server:
        missing = httpx.get(f"{server.url}/_sandbox/journal")
        wrong = httpx.get(f"{server.url}/_sandbox/journal", headers={"authorization": "Bearer nope"})
        right = httpx.get(f"{server.url}/_sandbox/journal", headers={"x-sandbox-token": TOKEN})
    assert missing.status_code == wrong.status_code == 401
    assert "the control API needs its token: send `Authorization: Bearer TOKEN`" in missing.json()["error"]
    assert right.status_code == 200


def test_scopes_keep_each_tests_exchanges_apart_and_reset_clears_one() -> None:
    with sandbox.serving(control=True) as server:
        control = httpx.Client(base_url=f"{server.url}/_sandbox", headers={"authorization": f"Bearer {server.token}"})
        with control:
            _ask(server.url, "plain_text", scope="test_a")
            _ask(server.url, "plain_text", scope="test_b")
            _ask(server.url, "nonexistent", scope="test_b")
            a = control.get("/journal", headers={"x-sandbox-scope": "test_a"}).json()
            b = control.get("/journal", headers={"x-sandbox-scope": "test_b"}).json()
            assert control.post("/reset", headers={"x-sandbox-scope": "test_b"}).json() == {
                "scope": "test_b",
                "reset": True,
            }
            after = control.get("/journal", headers={"x-sandbox-scope": "test_b"}).json()
    assert [entry["status"] for entry in a["exchanges"]] == [200]
    assert a["exchanges"][0]["text"] == "Hello! No tools needed for that."
    assert a["transcript"].startswith("#1 POST /v1/chat/completions -> 200 [plain_text step 0]")
    assert [entry["status"] for entry in b["exchanges"]] == [200, 404]
    assert "nonexistent" in b["exchanges"][1]["error"]
    assert after["exchanges"] == []
    assert len(server.journal("test_a")) == 1


def test_a_scenario_loaded_at_run_time_answers_by_its_name() -> None:
    with sandbox.serving(control=True, token=TOKEN) as server:
        auth = {"authorization": f"Bearer {TOKEN}"}
        loaded = httpx.post(f"{server.url}/_sandbox/scenarios", content=GREETER, headers=auth)
        answer = _ask(server.url, "greeter")
        builtin = httpx.post(
            f"{server.url}/_sandbox/scenarios", content=GREETER.replace("greeter", "single_call"), headers=auth
        )
        broken = httpx.post(f"{server.url}/_sandbox/scenarios", content='name = "x"\n', headers=auth)
        unknown = httpx.post(f"{server.url}/_sandbox/restart", headers=auth)
    assert loaded.json() == {"loaded": "greeter"}
    assert answer.json()["choices"][0]["message"]["content"] == "Hello from a scenario loaded at run time."
    assert builtin.status_code == 409 and "built-in scenario's name" in builtin.json()["error"]
    assert broken.status_code == 400 and "has no steps" in broken.json()["error"]
    assert unknown.status_code == 404 and "GET /_sandbox/journal" in unknown.json()["error"]


def test_serving_has_clear_errors_for_options_that_do_not_go_together() -> None:
    with pytest.raises(sandbox.UsageError, match="add control=True"):
        with sandbox.serving(token=TOKEN):
            pass
    with pytest.raises(sandbox.UsageError, match="takes the engine as it is"):
        with sandbox.serving("single_call", engine=sandbox.Engine()):
            pass


def test_the_sandbox_server_fixture_serves_the_marked_scenario(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import httpx
        import pytest


        @pytest.mark.sandbox("plain_text")
        def test_served(sandbox_server):
            body = {"model": "anything", "messages": [{"role": "user", "content": "hi"}]}
            answer = httpx.post(f"{sandbox_server.openai_url}/chat/completions", json=body)
            assert answer.json()["choices"][0]["message"]["content"] == "Hello! No tools needed for that."
            assert len(sandbox_server.journal()) == 1


        @pytest.mark.sandbox(scenario="single_call", echo="strict")
        def test_bad_marker(sandbox_server):
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*the sandbox_server fixture takes scenario=, budget= and faults=, not 'echo'*"])


def test_scenarios_loaded_at_run_time_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sandbox.adapters._control.MAX_LOADED", 1)
    with sandbox.serving(control=True, token=TOKEN) as server:
        auth = {"authorization": f"Bearer {TOKEN}"}
        first = httpx.post(f"{server.url}/_sandbox/scenarios", content=GREETER, headers=auth)
        again = httpx.post(f"{server.url}/_sandbox/scenarios", content=GREETER, headers=auth)
        other = httpx.post(f"{server.url}/_sandbox/scenarios", content=GREETER.replace("greeter", "x"), headers=auth)
    assert first.status_code == again.status_code == 200
    assert other.status_code == 409 and "has loaded 1 scenarios, the most it keeps" in other.json()["error"]
