"""The `stalls` row: `sandbox serve`'s memory while clients ask for big streamed answers and never
read them, and after its write timeout (5 s) dropped them. Loopback sockets only, bounded in time."""

from __future__ import annotations

import json
import socket
import time

WRITE_TIMEOUT = 5.0
"""`sandbox serve`'s default: an answer that stops leaving for this long is dropped."""


def big_stream_request() -> bytes:
    """A Responses stream quoting a 3.9 MiB tool result: about 20 MB of SSE frames to send back."""
    import sandbox
    from sandbox import skyl

    client = skyl.Client("openai-responses", transport=sandbox.transport())
    scenario = sandbox.get_scenario("single_call")
    req = skyl.Request(model="single_call", messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))
    first = client.complete(req)
    result = "0123456789abcdef" * (250_000 - 1000)
    req.messages += [first.message, skyl.tool_result_message(first.tool_calls()[0].id, result)]
    body = json.loads(client._prepare(req, stream=True)[1])
    body["store"] = False  # nothing kept: what is measured is the answers
    data = json.dumps(body).encode()
    head = f"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(data)}"
    return f"{head}\r\n\r\n".encode() + data


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def stalled_readers(port: int, pid: int, count: int) -> tuple[float, float, float, int]:
    """(RSS before, peak while held, after the write timeout, connections the server cut) in MB."""
    raw = big_stream_request()
    before = rss_mb(pid)
    sockets = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            sock.sendall(raw)
            sockets.append(sock)
        held = before
        deadline = time.monotonic() + WRITE_TIMEOUT + 5
        while time.monotonic() < deadline:
            held = max(held, rss_mb(pid))
            time.sleep(0.2)
        after = rss_mb(pid)
        cut = 0
        for sock in sockets:
            sock.settimeout(10)
            try:
                while sock.recv(1 << 20):
                    pass
                cut += 1
            except (ConnectionResetError, TimeoutError):
                cut += 1
    finally:
        for sock in sockets:
            sock.close()
    return before, held, after, cut
