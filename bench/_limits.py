"""The `limits` rows: what one client can cost the others (issue 14).

- the slowest request that fits the body limit, and how long a small request takes while it is in
  flight on `sandbox serve` (against the same small request alone);
- bytes out per byte in for the largest streamed answer (a tool result near 4 MiB, quoted);
- connections held open before a small request waits (against the common open-file limit, 1,024,
  at which the server used to stop accepting);
- memory of a long-lived transport sent large bodies (against the same transport after 30 of them).

Everything runs against 127.0.0.1, bounded in count and time.
"""

from __future__ import annotations

import json
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT = 4 * 1024 * 1024


def _body_for(provider: str, messages: list, tools: list | None = None, stream: bool = False) -> tuple[str, bytes]:  # type: ignore[type-arg]
    import sandbox
    from sandbox import skyl

    client = skyl.Client(provider, transport=sandbox.transport())
    tool = skyl.Tool("get_weather", "w", {"type": "object", "properties": {"city": {"type": "string"}}})
    request = skyl.Request(model="single_call", messages=messages, tools=tools or [tool])
    url, body, _ = client._prepare(request, stream=stream)
    return "/" + url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0], body


def large_candidates() -> list[tuple[str, str, bytes]]:
    """(label, path, body) for shapes near the body limit that cost the engine the most."""
    from sandbox import skyl

    shapes: list[tuple[str, str, bytes]] = []
    for provider in ("openai", "openai-responses", "anthropic", "gemini"):
        turns = [skyl.user_text("hi")]
        for index in range(2000):
            call = skyl.ToolCall(f"call_{index}", "get_weather", {"city": "Paris"})
            turns += [skyl.Message("assistant", [call]), skyl.tool_result_message(call.id, "r" * 1500)]
        calls = [skyl.ToolCall(f"call_{index}", "get_weather", {"city": "P" * 7000}) for index in range(512)]
        wide = [skyl.user_text("hi"), skyl.Message("assistant", calls)]
        wide += [skyl.tool_result_message(call.id, "r") for call in calls]
        for label, messages in (("2,000 rounds", turns), ("512 calls in a turn", wide)):
            path, body = _body_for(provider, messages)
            if len(body) <= LIMIT:
                shapes.append((f"{provider}, {label}", path, body))
    return shapes


def slowest() -> tuple[str, str, bytes, float, float]:
    """The candidate with the longest `Engine.handle` (default budget, as served), with its time and
    json.loads's on the same bytes."""
    import sandbox

    engine = sandbox.Engine()  # as `sandbox serve` runs it
    worst = ("", "", b"", 0.0, 0.0)
    for label, path, body in large_candidates():
        started = time.perf_counter()
        engine.handle("POST", path, body)
        took = time.perf_counter() - started
        if took > worst[3]:
            started = time.perf_counter()
            json.loads(body)
            worst = (label, path, body, took, time.perf_counter() - started)
    return worst


def _post(port: int, path: str, body: bytes, timeout: float = 60) -> tuple[int, float]:
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"connection: close\r\n\r\n".encode()
            + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer[9:12]), time.perf_counter() - started


SMALL = json.dumps({"model": "plain_text", "messages": [{"role": "user", "content": "hi"}]}).encode()


def small_while_large(port: int, path: str, body: bytes) -> tuple[float, float, int, float]:
    """(median small alone, worst small while the large is in flight, smalls sent in flight, large's time)."""
    alone = [_post(port, "/v1/chat/completions", SMALL)[1] for _ in range(20)]
    large: dict[str, float] = {}

    def send_large() -> None:
        large["took"] = _post(port, path, body)[1]

    thread = threading.Thread(target=send_large)
    thread.start()
    during: list[float] = []
    deadline = time.monotonic() + 60
    while thread.is_alive() and time.monotonic() < deadline:
        during.append(_post(port, "/v1/chat/completions", SMALL)[1])
    thread.join(timeout=60)
    return statistics.median(alone), max(during, default=0.0), len(during), large.get("took", float("nan"))


def stream_ratio(provider: str) -> tuple[int, int, int]:
    """(bytes in, bytes out, frames) for the streamed answer quoting the largest result that fits."""
    import sandbox
    from sandbox import skyl

    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    scenario = sandbox.get_scenario("single_call")
    request = skyl.Request(model="single_call", messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))
    first = client.complete(request)
    result = "0123456789abcdef" * ((LIMIT - 8192) // 16)
    request.messages += [first.message, skyl.tool_result_message(first.tool_calls()[0].id, result)]
    skyl.collect_stream(client.stream(request))
    exchange = transport.journal[-1]
    assert exchange.status == 200, exchange.body[:300]
    return len(exchange.request_body), len(exchange.body), len(exchange.chunks)


STEPS = (500, 1000, 1500, 2000, 3000, 4000)


def connections_held(port: int, steps: tuple[int, ...] = STEPS) -> list[tuple[int, float]]:
    """(connections held, small request latency) at each step, stopping at the first slow answer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(steps) + 500), hard))
    held: list[socket.socket] = []
    results = []
    try:
        for step in steps:
            while len(held) < step:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            try:
                status, took = _post(port, "/v1/chat/completions", SMALL, timeout=5)
            except OSError:
                status, took = 0, float("inf")
            results.append((step, took if status == 200 else float("inf")))
            if took >= 1.0 or status != 200:
                break
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return results


def memory_child(total: int) -> None:
    """Fresh process: one transport, `total` second requests each quoting a distinct 1 MiB result."""
    import gc

    import sandbox
    from sandbox import skyl

    def rss_mb() -> float:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))

    transport = sandbox.transport()
    client = skyl.Client("openai", transport=transport)
    scenario = sandbox.get_scenario("single_call")
    rss = {}
    for index in range(total):
        request = skyl.Request(
            model="single_call", messages=[skyl.user_text(f"{scenario.prompt} ({index})")], tools=list(scenario.tools)
        )
        first = client.complete(request)
        result = f"{index:08d}" * (1024 * 1024 // 8)
        request.messages += [first.message, skyl.tool_result_message(first.tool_calls()[0].id, result)]
        client.complete(request)
        if index + 1 in (30, total // 2, total):
            gc.collect()
            rss[str(index + 1)] = rss_mb()
    print(json.dumps({"rss": rss, "held": len(transport.journal), "dropped": transport.journal.dropped}))


def run_memory(total: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "memory", str(total)], capture_output=True, text=True, check=True, timeout=600
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    memory_child(int(sys.argv[2]))
