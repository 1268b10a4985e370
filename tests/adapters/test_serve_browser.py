"""`sandbox serve` called from a web page in a real browser (Debian's Chromium, driven by Playwright).

The page is served from one loopback port and the sandbox from another: two origins, so Chromium
sends its CORS preflights and refuses what the answers do not allow, as it would for a learner's
own front end calling the real APIs. Skips without Chromium on a developer's machine; FAILS on CI.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sandbox
from tests.loopback import serving
from tests.room.test_browser import ARGS, CHROMIUM

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>learner's page</title></head>
<body style="font: 16px sans-serif"><h1>A learner's page calling the sandbox</h1>
<pre id="out" style="white-space: pre-wrap">...</pre></body></html>"""

SCRIPT = """async (base) => {
  const show = (results) => {
    document.getElementById("out").textContent = Object.entries(results).map(([name, r]) =>
      `${name}: ${r.blocked ? "blocked by the browser (" + r.blocked + ")" : r.status + "  " + r.body.slice(0, 90)}`
    ).join("\\n");
  };
  const call = async (path, headers, body) => {
    try {
      const answer = await fetch(base + path, {
        method: "POST", headers: {"content-type": "application/json", ...headers}, body: JSON.stringify(body)});
      return {status: answer.status, body: await answer.text(), requestId: answer.headers.get("request-id")};
    } catch (error) { return {blocked: String(error)}; }
  };
  const messages = {model: "plain_text", max_tokens: 100, messages: [{role: "user", content: "hi"}]};
  const results = {
    openai: await call("/v1/chat/completions", {authorization: "Bearer sk-browser"},
                       {model: "plain_text", messages: [{role: "user", content: "hi"}]}),
    openaiStream: await call("/v1/chat/completions", {authorization: "Bearer sk-browser"},
                             {model: "plain_text", stream: true, messages: [{role: "user", content: "hi"}]}),
    anthropic: await call("/v1/messages", {"x-api-key": "k", "anthropic-version": "2023-06-01",
                                           "anthropic-dangerous-direct-browser-access": "true"}, messages),
    anthropicWithoutOptIn: await call("/v1/messages", {"x-api-key": "k", "anthropic-version": "2023-06-01"}, messages),
  };
  show(results);
  return results;
}"""


@contextlib.contextmanager
def page_server() -> Iterator[str]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        message = f"Chromium is not installed at {CHROMIUM} (Debian: apt-get install chromium)"
        if os.environ.get("CI") or os.environ.get("SANDBOX_REQUIRE_CHROMIUM"):
            pytest.fail(f"{message}: the browser tests need it on CI.", pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def test_a_web_page_on_another_origin_calls_the_sandbox_as_it_would_the_real_apis(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with serving(sandbox.Engine()) as base, page_server() as origin:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        try:
            page = context.new_page()
            page.goto(origin + "/")
            results = page.evaluate(SCRIPT, base)
            page.screenshot(path=str(tmp_path_factory.getbasetemp() / "serve-browser.png"), full_page=True)
        finally:
            context.close()
    assert results["openai"]["status"] == 200, results
    assert json.loads(results["openai"]["body"])["choices"][0]["message"]["content"]
    assert results["openaiStream"]["status"] == 200 and "data: [DONE]" in results["openaiStream"]["body"]
    assert results["anthropic"]["status"] == 200, results
    assert results["anthropic"]["requestId"], "access-control-expose-headers lets the page read request-id"
    # Without the opt-in the real API answers 401 with no CORS header: the browser hides the answer.
    assert "blocked" in results["anthropicWithoutOptIn"], results
