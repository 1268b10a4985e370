"""`sandbox serve` as browsers and HTTP clients meet it: HEAD, CORS preflights and headers, and
compressed request bodies, answered as the real APIs answer them (see `sandbox/adapters/_asgi.py`
for the evidence). A real server in a child process on a free loopback port; requests with httpx.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator

import httpx
import pytest

from tests.reliability.test_server import ROOT, _free_port, _wait_until_up

_SERVE = (
    "import sys, sandbox; sandbox.serve(sandbox.Engine(budget=10**6), host='127.0.0.1', port=int(sys.argv[1]), "
    "cors_origins=sys.argv[2:] or ['*'])"
)
ORIGIN = "http://localhost:3000"
BODIES = {
    "/v1/chat/completions": {"model": "plain_text", "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": "plain_text", "input": "hi"},
    "/v1/messages": {"model": "plain_text", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
    "/v1beta/models/plain_text:generateContent": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}
BROWSER = {"origin": ORIGIN, "anthropic-dangerous-direct-browser-access": "true"}


@contextlib.contextmanager
def serving(*origins: str) -> Iterator[str]:
    with tempfile.TemporaryFile() as log:
        port = _free_port()
        command = [sys.executable, "-c", _SERVE, str(port), *origins]
        process = subprocess.Popen(command, stdout=log, stderr=log, cwd=ROOT)
        try:
            if not _wait_until_up(process, f"http://127.0.0.1:{port}"):
                log.seek(0)
                pytest.fail(f"sandbox serve did not start:\n{log.read().decode(errors='replace')[-2000:]}")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=15)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serving() as url:
        yield url


def test_head_is_get_without_the_body(base: str) -> None:
    get = httpx.get(f"{base}/", timeout=10)
    head = httpx.head(f"{base}/", timeout=10)
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == str(len(get.content))
    assert head.headers["content-type"] == get.headers["content-type"]


@pytest.mark.parametrize("path", list(BODIES))
def test_a_browser_preflight_is_allowed_with_the_headers_the_sdks_send(base: str, path: str) -> None:
    asked = "authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access"
    preflight = httpx.options(
        f"{base}{path}",
        headers={"origin": ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": asked},
        timeout=10,
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == asked
    assert int(preflight.headers["access-control-max-age"]) > 0


@pytest.mark.parametrize("path", list(BODIES))
def test_answers_to_a_browser_carry_access_control_allow_origin(base: str, path: str) -> None:
    answer = httpx.post(f"{base}{path}", json=BODIES[path], headers=BROWSER, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.headers["access-control-expose-headers"] == "*"  # request ids readable by the page


def test_anthropic_refuses_a_browser_that_did_not_opt_in_as_the_real_api_does(base: str) -> None:
    answer = httpx.post(f"{base}/v1/messages", json=BODIES["/v1/messages"], headers={"origin": ORIGIN}, timeout=10)
    assert answer.status_code == 401
    error = answer.json()["error"]
    assert error == {
        "type": "authentication_error",
        "message": "CORS requests must set 'anthropic-dangerous-direct-browser-access' header",
    }
    assert "access-control-allow-origin" not in answer.headers


@pytest.mark.slow
def test_cors_origin_narrows_who_may_call() -> None:
    ask = {"access-control-request-method": "POST"}
    path = "/v1/chat/completions"
    with serving(ORIGIN) as narrowed:
        allowed = httpx.options(f"{narrowed}{path}", headers={"origin": ORIGIN, **ask}, timeout=10)
        other = httpx.options(f"{narrowed}{path}", headers={"origin": "http://evil.example", **ask}, timeout=10)
        answer = httpx.post(
            f"{narrowed}{path}", json=BODIES[path], headers={"origin": "http://evil.example"}, timeout=10
        )
        mine = httpx.post(f"{narrowed}{path}", json=BODIES[path], headers={"origin": ORIGIN}, timeout=10)
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == ORIGIN and allowed.headers["vary"] == "origin"
    assert other.status_code == 403
    assert "--cors-origin http://evil.example" in other.json()["error"]["message"]
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers
    assert mine.headers["access-control-allow-origin"] == ORIGIN


def _br(data: bytes) -> bytes:
    brotli = pytest.importorskip("brotli")
    return bytes(brotli.compress(data))


ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": _br,
    "gzip, deflate": lambda data: zlib.compress(gzip.compress(data)),
}


@pytest.mark.parametrize("encoding", list(ENCODERS))
def test_a_compressed_body_is_decoded_as_the_real_apis_do(base: str, encoding: str) -> None:
    body = json.dumps(BODIES["/v1/chat/completions"]).encode()
    plain = httpx.post(f"{base}/v1/chat/completions", content=body, timeout=10)
    encoded = httpx.post(
        f"{base}/v1/chat/completions",
        content=ENCODERS[encoding](body),
        headers={"content-encoding": encoding, "content-type": "application/json"},
        timeout=10,
    )
    assert encoded.status_code == 200, encoded.text
    assert encoded.json()["choices"] == plain.json()["choices"]


def test_an_unknown_encoding_is_a_415_that_names_it(base: str) -> None:
    answer = httpx.post(
        f"{base}/v1/messages", content=b"(zstd bytes)", headers={"content-encoding": "zstd"}, timeout=10
    )
    assert answer.status_code == 415
    message = answer.json()["error"]["message"]
    assert "Content-Encoding: zstd" in message and "gzip" in message


def test_a_zip_bomb_is_refused_by_the_limit_after_decoding(base: str) -> None:
    bomb = gzip.compress(b" " * (64 * 1024 * 1024))  # 64 KiB on the wire, 64 MiB decoded
    assert len(bomb) < 100 * 1024
    answer = httpx.post(f"{base}/v1/responses", content=bomb, headers={"content-encoding": "gzip"}, timeout=30)
    assert answer.status_code == 413
    assert "decoded from gzip" in answer.json()["error"]["message"]


def test_a_body_that_is_not_what_its_encoding_says_is_a_clear_400(base: str) -> None:
    body = json.dumps(BODIES["/v1/chat/completions"]).encode()
    answer = httpx.post(f"{base}/v1/chat/completions", content=body, headers={"content-encoding": "gzip"}, timeout=10)
    assert answer.status_code == 400
    assert "could not be decoded as gzip" in answer.json()["error"]["message"]
