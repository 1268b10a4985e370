"""The grader's doors hold what sandboxed code sends to a bound: its memory and its descriptors stay
within what `sandbox.grading.boundary._endpoint` and `_protocol` state, whatever arrives.

Each flood is aimed at the grader's own code running in this process (the endpoint, a worker's socket)
and reads this process's resident memory, as the exploits of the issue did against a grading run:
hundreds of connections each holding back the last byte of a 4 MiB body, hundreds of whole 4 MiB
bodies (straight to the endpoint, and from a program through its sandbox's relay), a 64 MiB frame of
`{},{},...` on a worker's socket, and 1,500 idle connections.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sandbox.cli import main
from sandbox.grading.boundary._endpoint import MAX_CONNECTIONS, MEMORY_BOUND, TOOLS_PATH, Endpoint
from sandbox.grading.boundary._isolation import choose
from sandbox.grading.boundary._protocol import ANSWER_LIMIT
from sandbox.grading.boundary._runner import WorkerDied, WorkerProcess, Zygote
from sandbox.grading.learner._loopback import Connections

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads memory from /proc")

MIB = 1024 * 1024


def _rss() -> int:
    """This process's resident memory, in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


class _Door:
    def model(self, method: str, path: str, body: bytes, query: str) -> tuple[int, Mapping[str, str], bytes]:
        return 200, {"content-type": "application/json"}, json.dumps({"size": len(body)}).encode()

    async def tool(self, payload: Any) -> Mapping[str, Any]:
        return {"output": f"ran {payload.get('call')}"}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    started = Endpoint()
    yield started
    started.close()


def _flood(port: int, target: str, count: int, size: int, held_back: int) -> tuple[int, list[socket.socket]]:
    """Open `count` connections, each sending a request head for a body of `size` bytes and then all but
    `held_back` of them, as fast as the endpoint takes them. Returns the peak resident memory seen, and
    the connections (still open, for the caller to close)."""
    head = f"POST {target} HTTP/1.1\r\nhost: x\r\ncontent-length: {size}\r\n\r\n".encode()
    body = memoryview(bytes(size - held_back))
    sent: dict[socket.socket, int] = {}
    watched = selectors.DefaultSelector()
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port))
        connection.setblocking(False)
        connection.send(head)
        sent[connection] = 0
        watched.register(connection, selectors.EVENT_WRITE)
    peak = _rss()
    quiet = 0
    while watched.get_map() and quiet < 3:
        ready = watched.select(1.0)
        quiet = 0 if ready else quiet + 1
        for key, _ in ready:
            connection = key.fileobj
            assert isinstance(connection, socket.socket)
            try:
                sent[connection] += connection.send(body[sent[connection] : sent[connection] + MIB])
            except BlockingIOError:
                continue
            except OSError:  # the endpoint closed it
                sent[connection] = len(body)
            if sent[connection] == len(body):
                watched.unregister(connection)
        peak = max(peak, _rss())
    watched.close()
    return peak, list(sent)


@pytest.mark.slow
@pytest.mark.parametrize(("count", "held_back"), [(300, 1), (250, 0)], ids=["held-back", "whole"])
def test_bodies_from_hundreds_of_connections_cost_the_grader_a_bounded_memory(
    endpoint: Endpoint, count: int, held_back: int
) -> None:
    """Every body sandboxed code sends at once, whole or held back a byte short, costs the grader at most
    `MEMORY_BOUND` bytes; and the door still answers afterwards."""
    base = endpoint.open(_Door())
    target = "/" + base.rsplit("/", 1)[-1] + "/v1/chat/completions"
    before = _rss()
    peak, connections = _flood(endpoint.port, target, count, 4 * MIB, held_back)
    try:
        assert peak - before < MEMORY_BOUND, f"the grader grew by {(peak - before) // MIB} MiB"
    finally:
        for connection in connections:
            connection.close()
    token = base.rsplit("/", 1)[-1]
    connections = Connections(base)
    status = 503
    while status == 503:  # as the refusal says: retry after a moment (the flood's bodies are still let go of)
        status, _, content = connections.exchange("POST", f"/{token}/v1/chat/completions", [], b"{}")
    connections.close()
    assert (status, json.loads(content)) == (200, {"size": 2})


def _answer(connection: socket.socket) -> bytes:
    """What the endpoint sends before it closes the connection (failing, rather than hanging, if it never does)."""
    connection.settimeout(60)
    answer = b""
    while data := connection.recv(65536):
        answer += data
    return answer


def test_a_body_for_an_unknown_door_is_refused_before_it_is_read(endpoint: Endpoint) -> None:
    with socket.create_connection(("127.0.0.1", endpoint.port)) as connection:
        connection.sendall(b"POST /guessed/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 4194304\r\n\r\n")
        answer = _answer(connection)
    assert answer.startswith(b"HTTP/1.1 404 ") and b"no conversation here" in answer


def test_a_body_over_the_limit_is_refused_before_it_is_read(endpoint: Endpoint) -> None:
    token = endpoint.open(_Door()).rsplit("/", 1)[-1]
    with socket.create_connection(("127.0.0.1", endpoint.port)) as connection:
        connection.sendall(
            f"POST /{token}/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {64 * MIB}\r\n\r\n".encode()
        )
        answer = _answer(connection)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"request body too large" in answer


def test_a_head_over_the_limit_closes_the_connection(endpoint: Endpoint) -> None:
    token = endpoint.open(_Door()).rsplit("/", 1)[-1]
    with socket.create_connection(("127.0.0.1", endpoint.port)) as connection:
        connection.sendall(f"GET /{token}/v1/models HTTP/1.1\r\nhost: x\r\nx-filler: ".encode())
        try:
            for _ in range(64):
                connection.sendall(b"a" * 4096)
            answer = connection.recv(65536)
        except ConnectionError:
            answer = b""
    assert not answer.startswith(b"HTTP/1.1 200"), "a head of any size was read whole"


@pytest.mark.slow
def test_idle_connections_by_the_thousand_cost_no_descriptors_and_stop_no_worker(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    """1,500 idle connections: the endpoint keeps at most `MAX_CONNECTIONS` of them open, a newcomer is
    still served, and a worker whose socket's descriptor number is past 1,024 still answers."""
    base = endpoint.open(_Door())
    before = _descriptors()
    idle = [socket.create_connection(("127.0.0.1", endpoint.port)) for _ in range(1500)]
    zygote = Zygote()
    try:
        connections = Connections(base)
        served = connections.post_json(f"/{base.rsplit('/', 1)[-1]}{TOOLS_PATH}", {"call": "x"})
        connections.close()
        assert served == {"output": "ran x"}
        held = _descriptors() - before - len(idle)
        assert held <= MAX_CONNECTIONS + 16, f"the grader holds {held} descriptors for idle connections"
        module = tmp_path / "learner.py"
        module.write_text("def double(x):\n    return x * 2\n")
        worker = WorkerProcess(zygote)
        load = {"op": "load", "path": str(module), "shown_as": "learner.py", "source": module.read_text()}
        assert worker.request(load, 30)["op"] == "loaded"
        worker.close()
    finally:
        zygote.close()
        for connection in idle:
            connection.close()


FRAME = """
import gc, socket, struct

inner = b'{"op":"loaded","functions":{},"x":[' + b"{}," * ((64 << 20) // 3 - 20) + b'{}]}'
for thing in gc.get_objects():
    if isinstance(thing, socket.socket) and thing.fileno() != -1 and thing.family == socket.AF_UNIX:
        try:
            thing.sendall(struct.pack(">I", len(inner)) + inner)
        except OSError:
            continue
        break

def double(x):
    return x * 2
"""


@pytest.mark.slow
def test_a_64_mib_frame_on_a_worker_s_socket_is_refused_from_its_header(tmp_path: Path) -> None:
    """A frame of `{},{},...` the size of the old limit would have grown the grader by gigabytes as
    parsed objects; the grader reads at most `ANSWER_LIMIT` bytes of one and ends the worker."""
    module = tmp_path / "learner.py"
    module.write_text(FRAME)
    zygote = Zygote()
    worker = WorkerProcess(zygote)
    try:
        before = _rss()
        load = {"op": "load", "path": str(module), "shown_as": "learner.py", "source": FRAME}
        with pytest.raises(WorkerDied, match=f"over the {ANSWER_LIMIT} limit"):
            worker.request(load, 60)
        assert _rss() - before < 8 * ANSWER_LIMIT
    finally:
        worker.close()
        zygote.close()


RELAY_FLOOD = """
import os, selectors, socket, sys
from urllib.parse import urlsplit

base = urlsplit(os.environ["SANDBOX_BASE_URL"])
size = 4 << 20
head = f"POST {base.path}/v1/chat/completions HTTP/1.1\\r\\nhost: x\\r\\ncontent-length: {size}\\r\\n\\r\\n".encode()
body = memoryview(bytes(size))
sent, watched = {}, selectors.DefaultSelector()
for _ in range(250):
    try:
        connection = socket.create_connection((base.hostname, base.port), timeout=5)
        connection.sendall(head)
    except OSError:
        continue
    connection.setblocking(False)
    sent[connection] = 0
    watched.register(connection, selectors.EVENT_WRITE)
while watched.get_map():
    ready = watched.select(2.0)
    if not ready:
        break
    for key, _ in ready:
        try:
            sent[key.fileobj] += key.fileobj.send(body[sent[key.fileobj] : sent[key.fileobj] + (1 << 20)])
        except BlockingIOError:
            continue
        except OSError:
            sent[key.fileobj] = size
        if sent[key.fileobj] >= size:
            watched.unregister(key.fileobj)
sys.exit(1)
"""


def _resident(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _launchers() -> list[int]:
    """The grader's launchers (`_launch`), each the first process of a program's sandbox."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"launch.py" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_bodies_through_the_relay_cost_the_grader_a_bounded_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A program sends 250 bodies of 4 MiB at once through its sandbox's relay: the grader (this process)
    and the relay (the launcher) together stay within `MEMORY_BOUND` of where they started."""
    if not choose("auto").sandboxed:
        pytest.skip(f"the relay runs under bubblewrap, which is not usable here: {choose('auto').why}")
    program = tmp_path / "flood.py"
    program.write_text(RELAY_FLOOD)
    program.chmod(0o755)
    tmp_path.chmod(0o755)
    before = _rss()
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _rss() - before + sum(_resident(pid) for pid in _launchers()))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        status = main(["grade", "2", "--wire", "openai", "--timeout", "20", "--", sys.executable, str(program)])
    finally:
        done.set()
        sampler.join()
    out = capsys.readouterr().out
    assert status == 1 and "02_bounded_loop  failing" in out, out[-2000:]
    assert peak[0] < MEMORY_BOUND, f"the grader and its relay grew by {peak[0] // MIB} MiB"
