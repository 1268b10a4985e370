"""The `sandbox serve` rows: a server in its own process, a low-overhead load generator in this one.

The load generator (`_load`: one kept-alive connection per simulated client, one request in flight
on each) measures every server the same way. Two baselines, measured in the same run:

- the starlette floor: a minimal starlette app under uvicorn (httptools and uvloop, as `uvicorn`
  picks them when installed) answering with the sandbox's own answers, prepared at start-up: no
  validation, no engine, only the web framework's cost;
- CopilotKit's aimock (Node), installed from npm into bench/.aimock, answering the same requests
  with one catch-all fixture (skipped with one line where node is missing).

A third subject, `protocol`, is `sandbox serve` itself with an engine that answers the same canned
answers (`canned_engine`): what the server costs per request outside the engine, against the floor.

Run as a script, this module is the server child: `python bench/_serve.py sandbox|protocol|starlette PORT [PROFILE]`.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _load import Cell, cpu_seconds, measure

__all__ = ["Cell", "cpu_seconds", "measure", "request_pool", "server_process"]

HERE = Path(__file__).resolve().parent
PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
POOL = 4000
"""Distinct request bodies per mode. The repeat guard allows 50 identical requests per client within
10 s; cycling through this many keeps every body well under that for a whole bench run."""


def request_pool(stream: bool, size: int = POOL) -> list[bytes]:
    """Raw HTTP/1.1 requests for a 2-round tool loop's second request (history with a call and its
    result, so the replay validation runs), across the four providers, each body distinct."""
    import sandbox
    from sandbox import skyl

    scenario = sandbox.get_scenario("single_call")
    pool: list[bytes] = []
    templates = []
    for provider in PROVIDERS:
        client = skyl.Client(provider, transport=sandbox.transport())
        req = skyl.Request(model=scenario.name, messages=[skyl.user_text("PROMPT")], tools=list(scenario.tools))
        resp = client.complete(req)
        req.messages.append(resp.message)
        req.messages.extend(skyl.tool_result_message(call.id, "18C, clear") for call in resp.tool_calls())
        url, body, _ = client._prepare(req, stream=stream)
        path = url.split("://", 1)[1].split("/", 1)[1]
        templates.append(("/" + path, body))
    for index in range(size):
        path, body = templates[index % len(templates)]
        data = body.replace(b"PROMPT", f"What's the weather in Paris? ({index})".encode())
        head = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\n\r\n"
        )
        pool.append(head.encode() + data)
    return pool


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


@dataclass(frozen=True)
class Served:
    port: int
    pid: int


AIMOCK = "@copilotkit/aimock@1.43.0"
"""CopilotKit's mock server (Node), installed by the bench from npm into bench/.aimock (not committed)."""
AIMOCK_DIR = HERE / ".aimock"
_AIMOCK_CLI = AIMOCK_DIR / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
_AIMOCK_FIXTURE = {"fixtures": [{"match": {}, "response": {"content": "It is 18C and clear in Paris."}}]}


def aimock_ready() -> str | None:
    """None once aimock is installed (installing it if needed), else the one-line reason it is skipped."""
    if _AIMOCK_CLI.exists():
        return None
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "aimock skipped: node and npm are not installed"
    AIMOCK_DIR.mkdir(exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(AIMOCK_DIR), "--no-audit", "--no-fund", "--silent", AIMOCK],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or not _AIMOCK_CLI.exists():
        return f"aimock skipped: npm install {AIMOCK} failed: {(done.stderr or done.stdout).strip()[-200:]}"
    return None


@contextmanager
def server_process(kind: str, profile: Path | None = None) -> Iterator[Served]:
    """`kind` is `sandbox` (sandbox.serve, the code behind `sandbox serve`), `starlette` (the floor:
    a minimal starlette app under uvicorn serving the same canned answers) or `aimock`."""
    for _ in range(3):
        port = _free_port()
        if kind == "aimock":
            fixture = AIMOCK_DIR / "fixture.json"
            fixture.write_text(json.dumps(_AIMOCK_FIXTURE))
            args = ["node", str(_AIMOCK_CLI), "-p", str(port), "-f", str(fixture), "--log-level", "silent"]
        else:
            args = [sys.executable, str(HERE / "_serve.py"), kind, str(port)] + ([str(profile)] if profile else [])
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None and not _up(port):
            time.sleep(0.05)
        if process.poll() is None and _up(port):
            break
        process.kill()
        process.wait()
    else:
        raise RuntimeError(f"the {kind} server did not start: {process.stderr.read().decode()[-1000:]}")  # type: ignore[union-attr]
    try:
        yield Served(port, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


# -- the server child ---------------------------------------------------------------------------------


def canned_answers() -> dict[tuple[str, bool], tuple[int, dict[str, str], tuple[bytes, ...]]]:
    """The sandbox's own answers to the pool's requests (one per path and mode), made at start-up."""
    import sandbox

    answers: dict[tuple[str, bool], tuple[int, dict[str, str], tuple[bytes, ...]]] = {}
    engine = sandbox.Engine(budget=10**6)
    for stream in (False, True):
        for raw in request_pool(stream, size=len(PROVIDERS)):
            head, body = raw.split(b"\r\n\r\n", 1)
            target = head.split(b" ")[1].decode()
            path, _, query = target.partition("?")
            exchange = engine.handle("POST", path, body, query=query)
            answers[path, stream] = (exchange.status, dict(exchange.headers), exchange.chunks)
    return answers


def starlette_app() -> Any:
    """The starlette floor: a minimal starlette app serving the same canned answers (a streamed one
    through `StreamingResponse`, frame by frame, as an SSE endpoint in starlette is written)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    answers = canned_answers()

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def answer(request: Request) -> Response:
        body = await request.body()
        status, headers, chunks = answers[request.url.path, b'"stream":true' in body or "stream" in request.url.path]
        if len(chunks) == 1 and not headers.get("content-type", "").startswith("text/event-stream"):
            return Response(chunks[0], status, headers=headers)

        async def frames() -> Any:
            for chunk in chunks:
                yield chunk

        return StreamingResponse(frames(), status, headers=headers)

    paths = sorted({path for path, _ in answers})
    return Starlette(routes=[Route("/health", health), *(Route(path, answer, methods=["POST"]) for path in paths)])


def canned_engine() -> Any:
    """An engine whose `handle` answers the same canned answers as the floor, and nothing else of it
    changed: `sandbox serve` with it measures the server's own cost per request (uvicorn, the event
    loop, system calls, `SandboxApp`), all but the engine's work, through the product's own code path."""
    import sandbox
    from sandbox.engine._exchange import Exchange

    answers = canned_answers()

    class Canned(sandbox.Engine):
        def handle(
            self, method: str, path: str, body: bytes, *, client: str = "", query: str | None = None, **_: Any
        ) -> Exchange:
            status, headers, chunks = answers[path, b'"stream":true' in body or "stream" in path]
            return Exchange(method, path, status, headers, chunks, body)

    return Canned()


def _child(kind: str, port: int, profile: str | None) -> None:
    import sandbox

    def run() -> None:
        if kind in ("sandbox", "protocol"):
            sandbox.serve(sandbox.Engine() if kind == "sandbox" else canned_engine(), host="127.0.0.1", port=port)
        else:  # uvicorn as `uvicorn app:app` runs it: httptools and uvloop when installed
            import uvicorn

            uvicorn.run(starlette_app(), host="127.0.0.1", port=port, log_level="warning", access_log=False)

    if profile is None:
        run()
        return
    import cProfile
    import signal

    # uvicorn re-raises the SIGTERM it caught once it has shut down; a no-op handler lets the
    # profile be written after that instead of the process dying first.
    signal.signal(signal.SIGTERM, lambda *_: None)
    profiler = cProfile.Profile()
    profiler.runcall(run)
    profiler.dump_stats(profile)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    _child(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
