"""`sandbox serve` as a learner starts it: a real process on a free loopback port, driven over HTTP."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "serve", "--port", str(port), "--budget", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    else:
        process.kill()
        pytest.fail(f"sandbox serve did not come up: {process.communicate()[0]}")
    yield base, process
    process.terminate()
    process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


def test_serve_answers_curl_style_requests_on_every_wire_format(served: tuple[str, subprocess.Popen[str]]) -> None:
    base, _ = served
    chat = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": "plain_text", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert chat.json()["choices"][0]["message"]["content"] == "Hello! No tools needed for that."
    for version in ("v1", "v1beta"):
        gemini = httpx.post(
            f"{base}/{version}/models/plain_text:streamGenerateContent?alt=sse",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        )
        assert gemini.headers["content-type"].startswith("text/event-stream")
        frames = [json.loads(line[6:]) for line in gemini.text.split("\r\n\r\n") if line.startswith("data: ")]
        text = "".join(part["text"] for frame in frames for part in frame["candidates"][0]["content"]["parts"])
        assert text == "Hello! No tools needed for that."
        assert len(frames) > 1, "the text arrives over several frames"


def test_serve_keeps_serving_after_bad_input(served: tuple[str, subprocess.Popen[str]]) -> None:
    base, process = served
    bad = httpx.post(f"{base}/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["type"] == "error"
    assert httpx.post(f"{base}/v1/nothing", json={}).status_code == 404
    assert httpx.get(f"{base}/health").json()["status"] == "ok"
    assert process.poll() is None


def test_serve_budget_option_stops_a_runaway(served: tuple[str, subprocess.Popen[str]]) -> None:
    base, _ = served
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    body = {"model": "single_call", "messages": [{"role": "user", "content": "Weather?"}], "tools": [weather]}
    with httpx.Client(base_url=base) as loop:  # one keep-alive connection: one sender
        statuses = [loop.post("/v1/chat/completions", json=body).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 400]
        last = loop.post("/v1/chat/completions", json=body)
    message = json.loads(last.content)["error"]["message"]
    assert "this exact request has arrived 5 times" in message and "over the budget of 3" in message


@pytest.mark.slow
def test_serve_repeat_guard_never_refuses_people_behind_one_address(served: tuple[str, subprocess.Popen[str]]) -> None:
    """Sixty learners behind one NAT address send the same correct first request: all answered."""
    base, _ = served
    body = {"model": "plain_text", "messages": [{"role": "user", "content": "the workshop's first request"}]}
    statuses = []
    for _ in range(60):
        with httpx.Client(base_url=base) as learner:
            statuses.append(learner.post("/v1/chat/completions", json=body).status_code)
    assert statuses == [200] * 60


def test_serve_banner_says_where_to_point_the_sdks(served: tuple[str, subprocess.Popen[str]]) -> None:
    base, process = served
    process.terminate()
    output = process.communicate(timeout=10)[0]
    assert f"Serving the sandbox at {base}" in output
    assert f"base_url={base}/v1" in output


@pytest.mark.slow
def test_serve_on_port_0_prints_the_port_it_bound() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.match(r"Serving the sandbox at http://127\.0\.0\.1:(\d+) \(Ctrl-C to stop\)\.", first)
        assert found is not None and found[1] != "0", first
        deadline = time.monotonic() + 20
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{found[1]}/health", timeout=1)
                break
            except httpx.ConnectError:  # the banner comes as the port is bound, just before it listens
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert health.json()["status"] == "ok"
    finally:
        process.terminate()
        assert process.wait(10) == 0, "SIGTERM ends `sandbox serve` with status 0"
        if process.stdout is not None:
            process.stdout.close()
