"""The real-API guard: with the plugin loaded and no mount active, a request to a real provider host
fails before any name is resolved or socket opened, and says how to mount the sandbox.

Every inner test replaces `socket.getaddrinfo` and `socket.socket.connect` with recorders that raise,
so a request the guard let through would be caught before it left the machine, and the test asserts
that none was even attempted.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow

NO_NETWORK = """
import socket

import pytest

ATTEMPTS = []


class Unreachable(OSError):
    pass


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def getaddrinfo(host, *args, **kwargs):
        ATTEMPTS.append(("resolve", host))
        raise Unreachable(f"resolving {host} in a test")

    def connect(self, address):
        ATTEMPTS.append(("connect", address))
        raise Unreachable(f"connecting to {address} in a test")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    ATTEMPTS.clear()
    yield
"""

BLOCKED = """
import asyncio

import anthropic
import httpx
import openai

import sandbox

from conftest import ATTEMPTS


def test_openai_sdk_is_stopped_before_the_network():
    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    with pytest.raises(sandbox.UsageError, match="POST /v1/chat/completions to the real api.openai.com"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert ATTEMPTS == []


def test_async_anthropic_sdk_is_stopped_before_the_network():
    client = anthropic.AsyncAnthropic(api_key="sk-test", max_retries=0)
    request = client.messages.create(model="claude", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.APIConnectionError) as caught:
        asyncio.run(request)
    assert "the real api.anthropic.com" in str(caught.value.__cause__)
    assert ATTEMPTS == []


def test_httpx_to_a_cloud_host_is_stopped_and_says_how_to_mount():
    with pytest.raises(sandbox.UsageError) as caught:
        httpx.post("https://my-resource.openai.azure.com/openai/v1/chat/completions", json={})
    message = str(caught.value)
    assert "sandbox_mock" in message and "sandbox.mock(" in message and "sandbox_allow_real_api = true" in message
    assert ATTEMPTS == []


def test_a_mount_answers_and_other_hosts_pass():
    body = {"model": "plain_text", "messages": [{"role": "user", "content": "hi"}]}
    with sandbox.mock():
        assert httpx.post("https://api.openai.com/v1/chat/completions", json=body).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get("http://localhost:9/")
    assert ATTEMPTS == [("resolve", "localhost")]
"""

ALLOWED = """
import httpx

from conftest import ATTEMPTS


def test_the_request_goes_to_the_network():
    with pytest.raises(httpx.ConnectError, match="resolving api.openai.com in a test"):
        httpx.post("https://api.openai.com/v1/chat/completions", json={})
    assert ATTEMPTS == [("resolve", "api.openai.com")]
"""


def _files(pytester: pytest.Pytester, tests: str) -> None:
    pytester.makeconftest(NO_NETWORK)
    pytester.makepyfile(test_guard="import pytest\n" + tests)


def test_guard_stops_real_provider_requests_before_the_network(pytester: pytest.Pytester) -> None:
    _files(pytester, BLOCKED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(("env", "ini"), [("1", None), (None, "sandbox_allow_real_api = true")], ids=["env", "ini"])
def test_guard_opt_out_lets_requests_through(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: str | None, ini: str | None
) -> None:
    _files(pytester, ALLOWED)
    if env is not None:
        monkeypatch.setenv("SANDBOX_ALLOW_REAL_API", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_guard_opt_out_with_a_bad_value_has_clear_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _files(pytester, ALLOWED)
    monkeypatch.setenv("SANDBOX_ALLOW_REAL_API", "maybe")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*SANDBOX_ALLOW_REAL_API='maybe': use 1 to let tests reach the real provider hosts*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
