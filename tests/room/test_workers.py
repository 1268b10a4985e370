"""One room served by several worker processes: whichever worker a request reaches, it answers alike.

Two rooms on one file in this process stand in for two workers (each its own connection to the file
and its own view of it); `sandbox room --workers 2` is then run as an instructor runs it.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import http.client
import io
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.room_server import APPEND_ONCE, Learner, Served, run, serving_room

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
CHAT = {
    "model": "single_call",
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
}


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[tuple[Served, Served]]:
    """Two rooms on one file: what two worker processes of `sandbox room --workers 2` are."""
    with serving_room(tmp_path / "room.db", heartbeat=0.2) as one, serving_room(tmp_path / "room.db") as two:
        yield one, two


def _updates(served: Served, key: str) -> Iterator[dict[str, Any]]:
    with httpx.stream(
        "GET", f"{served.room}/api/events", headers={"authorization": f"Bearer {key}"}, timeout=10
    ) as sse:
        for line in sse.iter_lines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


def test_workers_page_on_one_sees_a_run_posted_through_the_other(workers: tuple[Served, Served]) -> None:
    one, two = workers
    ada = Learner.join(one.room, "ada")
    updates = _updates(one, one.service.key)
    assert list(next(updates)["rows"]) == ["ada"]
    ada.room = two.room
    assert ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)})).status_code == 202
    update = next(update for update in updates if update["rows"])
    assert list(update["rows"]) == ["ada"] and "failing" in update["rows"]["ada"]
    updates.close()


def test_workers_share_names_tokens_keys_and_runs(workers: tuple[Served, Served]) -> None:
    one, two = workers
    ada = Learner.join(one.room, "Ada")
    taken = httpx.post(f"{two.room}/api/join", json={"name": "ADA"}, timeout=10)
    assert taken.status_code == 409 and "has already joined" in taken.json()["error"]["message"]
    for served in (two, one, two):  # the streak counts every run, whichever worker took it
        ada.room = served.room
        assert ada.post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)})).status_code == 202
    for served in workers:
        cell = served.instructor("/api/state").json()["learners"][0]["cells"]["01_apply_tool_results"]
        assert (cell["streak"], cell["stuck"]) == (3, True)
    old = one.service.key
    rotated = one.instructor("/api/key", "POST").json()["key"]
    for key, status in ((old, 401), (rotated, 200)):
        answer = httpx.get(f"{two.room}/api/state", headers={"authorization": f"Bearer {key}"}, timeout=10)
        assert answer.status_code == status, "the other worker took the new key at once"


def test_workers_a_loops_conversation_goes_on_through_either(workers: tuple[Served, Served]) -> None:
    one, two = workers
    ada = Learner.join(one.room, "ada")
    headers = {"authorization": f"Bearer {ada.api_key}"}
    first = httpx.post(f"{two.base}/v1/chat/completions", json=CHAT, headers=headers, timeout=10)
    turn = first.json()["choices"][0]["message"]
    body = {**CHAT, "messages": [*CHAT["messages"], turn, turn]}  # the turn appended twice: refused
    assert httpx.post(f"{one.base}/v1/chat/completions", json=body, headers=headers, timeout=10).status_code == 400
    for served in workers:  # an exchange is recorded once it is answered
        chats = _eventually(functools.partial(_chats, served, "ada"), lambda chats: bool(chats and chats[0]["outcome"]))
        assert [(chat["requests"], chat["outcome"]["status"]) for chat in chats] == [(2, 400)]
    one.instructor("/api/learners/ada/rename", "POST", json={"name": "Ada L."})
    httpx.post(f"{two.base}/v1/chat/completions", json=CHAT, headers=headers, timeout=10)
    chats = _eventually(lambda: _chats(one, "Ada%20L."), lambda chats: len(chats) == 2)
    assert len(chats) == 2, "the renamed learner's loop is still theirs on the other worker"


def test_workers_hold_a_sender_to_one_rate(tmp_path: Path) -> None:
    db = tmp_path / "room.db"
    with serving_room(db, join_rate=0.01, join_burst=4) as one, serving_room(db, join_rate=0.01, join_burst=4) as two:
        statuses = [
            httpx.post(f"{(one, two)[i % 2].room}/api/join", json={"name": f"n{i}"}).status_code for i in range(6)
        ]
    assert statuses == [200] * 4 + [429] * 2, "the burst is the room's, not each worker's"


def test_room_file_from_an_earlier_version_is_brought_up_to_date(tmp_path: Path) -> None:
    db = tmp_path / "room.db"
    with contextlib.closing(sqlite3.connect(db)) as raw:
        raw.executescript(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE learners (name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE,
                api_key TEXT NOT NULL UNIQUE, joined REAL NOT NULL, expires REAL NOT NULL);
            CREATE TABLE progress (learner TEXT PRIMARY KEY, body TEXT NOT NULL);
            CREATE TABLE verified (learner TEXT PRIMARY KEY, body TEXT NOT NULL);
            CREATE TABLE conversations (learner TEXT NOT NULL, id TEXT NOT NULL, updated REAL NOT NULL,
                body TEXT NOT NULL, PRIMARY KEY (learner, id));
            INSERT INTO meta VALUES ('instructor_key', 'room-kept');
            INSERT INTO learners VALUES ('ada', 'x', 'y', 1.0, 1e12);
            INSERT INTO conversations VALUES ('ada', 'c1', 2.0, '{"outcome": null, "requests": 1}');
            """
        )
    with serving_room(db) as served:
        assert served.service.key == "room-kept"
        (row,) = served.instructor("/api/state").json()["learners"]
        assert (row["name"], row["conversations"]) == ("ada", 1)
        assert Learner.join(served.room, "grace").post(run(**{"02_bounded_loop": (1, 0)})).status_code == 202


class Connection:
    """One keep-alive connection, so one worker process; `worker` says which, from the kernel's tables."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def call(self, method: str, path: str, body: object = None, key: str | None = None) -> tuple[int, Any]:
        headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
        self.http.request(method, path, json.dumps(body).encode() if body is not None else None, headers)
        response = self.http.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data.startswith((b"{", b"[")) else data.decode()

    def close(self) -> None:
        self.http.close()

    def updates(self, key: str) -> Iterator[dict[str, Any]]:
        """The room page's live stream on this connection: each update, as it comes."""
        self.http.request("GET", "/room/api/events", headers={"authorization": f"Bearer {key}"})
        response = self.http.getresponse()
        assert response.status == 200
        while line := response.readline():
            if line.startswith(b"data: "):
                yield json.loads(line[6:])

    def worker(self, pids: set[int]) -> int:
        """The worker process holding the server's end of this connection (Linux: /proc)."""
        assert self.http.sock is not None
        ends = (f"0100007F:{self.port:04X}", f"0100007F:{self.http.sock.getsockname()[1]:04X}")
        rows = (line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:])
        inode = next(row[9] for row in rows if (row[1], row[2]) == ends)
        for pid in pids:
            if f"socket:[{inode}]" in map(_link, Path(f"/proc/{pid}/fd").iterdir()):
                return pid
        raise AssertionError(f"no worker holds connection {ends}")


def _link(fd: Path) -> str:
    """Where a process's file descriptor points (nothing once it is closed)."""
    try:
        return os.readlink(fd)
    except OSError:
        return ""


def _workers_of(pid: int) -> set[int]:
    """The worker processes `sandbox room --workers N` (pid) started: uvicorn's spawned children."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                found.add(int(stat.parent.name))
    return found


@contextlib.contextmanager
def _room_with_two_workers(db: Path) -> Iterator[tuple[int, str, set[int]]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [sys.executable, "-m", "sandbox", "room", "--workers", "2", "--port", str(port), "--room-db", str(db)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not any("Their own loops" in line for line in lines):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        banner = "".join(lines)
        assert "2 worker processes" in banner, banner
        key = re.search(r"\?key=(\S+)", banner)
        assert key is not None, banner
        deadline = time.monotonic() + 60
        while len(_workers_of(process.pid)) < 2 or not _answers(port):
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        yield port, key.group(1), _workers_of(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


def _chats(served: Served, quoted: str) -> list[dict[str, Any]]:
    chats: list[dict[str, Any]] = served.instructor(f"/api/learners/{quoted}").json()["conversations"]
    return chats


def _connected(port: int) -> Connection:
    connection = Connection(port)
    assert connection.call("GET", "/health")[0] == 200
    return connection


def _rows(connection: Connection, key: str) -> dict[str, dict[str, Any]]:
    status, state = connection.call("GET", "/room/api/state", key=key)
    assert status == 200, state
    return {row["name"]: row for row in state["learners"]}


def _eventually(get: Callable[[], T], done: Callable[[T], bool]) -> T:
    """`get()` once `done` says it is, within a few seconds."""
    deadline = time.monotonic() + 10
    while not done(value := get()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.slow
def test_room_command_with_two_workers_is_one_room(tmp_path: Path) -> None:
    db = tmp_path / "room.db"
    with _room_with_two_workers(db) as (port, key, pids), contextlib.ExitStack() as opened:
        by_worker: dict[int, list[Connection]] = {pid: [] for pid in pids}
        deadline = time.monotonic() + 30
        with ThreadPoolExecutor(4) as pool:  # whichever worker accepts first takes a connection: open them at once
            while min(map(len, by_worker.values())) < 2 and time.monotonic() < deadline:
                for connection in pool.map(lambda _: _connected(port), range(4)):
                    opened.callback(connection.close)
                    by_worker[connection.worker(pids)].append(connection)
        assert all(len(connections) >= 2 for connections in by_worker.values()), "both workers served connections"
        (a, a_too), (b, b_too) = (connections[:2] for connections in by_worker.values())
        learners = {}
        for number, (joins, posts) in enumerate(((a, b), (b, a), (a, b), (b, a))):
            status, joined = joins.call("POST", "/room/api/join", {"name": f"learner {number}"})
            assert status == 200, joined
            learners[joined["name"]] = joined
            failing = run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)})
            assert posts.call("POST", "/room/api/runs", failing, key=joined["token"])[0] == 202
            first = posts.call("POST", "/v1/chat/completions", CHAT, key=joined["api_key"])[1]
            turn = first["choices"][0]["message"]
            refused = {**CHAT, "messages": [*CHAT["messages"], turn, turn]}
            assert joins.call("POST", "/v1/chat/completions", refused, key=joined["api_key"])[0] == 400
        assert b.call("POST", "/room/api/join", {"name": "LEARNER 0"})[0] == 409

        updates = a_too.updates(key)  # the page's stream, on worker A
        assert len(next(updates)["rows"]) == 4
        passed = run(**{"02_bounded_loop": (2, 0)})
        assert b_too.call("POST", "/room/api/runs", passed, key=learners["learner 1"]["token"])[0] == 202  # worker B
        update = next(update for update in updates if "learner 1" in update["rows"])
        assert "passed" in update["rows"]["learner 1"]
        updates.close()

        for connection in (a, b):  # a learner's exchange is recorded once it is answered: wait for the last
            rows = _eventually(
                functools.partial(_rows, connection, key), lambda rows: all(r["rejected"] for r in rows.values())
            )
            assert sorted(rows) == sorted(learners)
            assert all(row["conversations"] == 1 for row in rows.values())
            assert all(row["cells"]["01_apply_tool_results"]["status"] == "failing" for row in rows.values())
            exported = connection.call("GET", "/room/export.csv", key=key)[1]
            assert {row["learner"] for row in csv.DictReader(io.StringIO(exported))} == set(learners)
            detail = connection.call("GET", "/room/api/learners/learner%202", key=key)[1]
            assert detail["conversations"][0]["requests"] == 2, "one conversation across both workers"

    with contextlib.ExitStack() as after:
        with _room_with_two_workers(db) as (port, again, _):
            assert again == key, "the instructor's URL survives the restart"
            with contextlib.closing(Connection(port)) as connection:
                rows = _rows(connection, key)
            assert {name: row["conversations"] for name, row in rows.items()} == dict.fromkeys(learners, 1)
            assert rows["learner 1"]["cells"]["02_bounded_loop"]["status"] == "passed"
            url, headers = f"http://127.0.0.1:{port}/room/api/events", {"authorization": f"Bearer {key}"}
            lines = after.enter_context(httpx.stream("GET", url, headers=headers)).iter_lines()
            assert len(json.loads(next(line for line in lines if line.startswith("data: "))[6:])["rows"]) == 4
        rest = list(lines)  # an open page's stream ends whole as its worker stops, never cut at the grace's end
        assert not [line for line in rest if line.startswith("data: ")]
