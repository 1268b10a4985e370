"""A workshop room under a real uvicorn, in a thread, on a free port of 127.0.0.1, and simulated learners."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from sandbox import SandboxApp
from sandbox.room import RecordingEngine, RoomApp, RoomDatabase, RoomService

TITLES = {
    "01_apply_tool_results": "Make the ordering mistake impossible",
    "02_bounded_loop": "The loop, bounded",
    "03_several_calls": "Several calls in one turn",
}
SCREENSHOTS: list[Path] = []
"""The screenshots this run kept: the summary prints their paths."""
APPEND_ONCE = "Append resp.message itself, once per turn; never a reconstruction."
TURN_FIRST = "Append resp.message before any tool result: every provider requires it."


@dataclass
class Served:
    base: str
    """http://127.0.0.1:PORT"""
    service: RoomService

    @property
    def room(self) -> str:
        return f"{self.base}/room"

    @property
    def page(self) -> str:
        return f"{self.base}/room/?key={self.service.key}"

    def instructor(self, path: str, method: str = "GET", **kwargs: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.service.key}"}
        return httpx.request(method, f"{self.room}{path}", headers=headers, timeout=10, **kwargs)

    def update(self) -> bytes:
        """The first live update the page's stream sends: what every open page receives."""
        headers = {"authorization": f"Bearer {self.service.key}"}
        with httpx.stream("GET", f"{self.room}/api/events", headers=headers, timeout=10) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    return line.encode()
        raise AssertionError("the stream ended without an update")


@contextlib.contextmanager
def serving_room(db: Path, *, port: int = 0, **options: Any) -> Iterator[Served]:
    """Serve the sandbox with a room on `db` until the block ends (on `port`, or any free one)."""
    rates = {name: options.pop(name) for name in ("join_rate", "join_burst", "post_rate") if name in options}
    store = RoomDatabase(db)
    service = RoomService(store, titles=options.pop("titles", TITLES), min_interval=0.05, **options)
    app = RoomApp(SandboxApp(RecordingEngine()), service, **rates)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1000):
        if instance.started:
            break
        threading.Event().wait(0.01)
    assert instance.started, "uvicorn did not start"
    try:
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", service)
    finally:
        service.closing = True
        instance.should_exit = True
        thread.join(15)
        sock.close()
        store.close()


@dataclass
class Learner:
    """A simulated learner: joined once, then posting runs as their grader would."""

    room: str
    name: str
    token: str
    api_key: str

    @classmethod
    def join(cls, room: str, name: str) -> Learner:
        response = httpx.post(f"{room}/api/join", json={"name": name}, timeout=10)
        assert response.status_code == 200, response.text
        data = response.json()
        return cls(room, data["name"], data["token"], data["api_key"])

    def post(self, run: dict[str, Any]) -> httpx.Response:
        return httpx.post(
            f"{self.room}/api/runs", json=run, headers={"authorization": f"Bearer {self.token}"}, timeout=10
        )


def run(**cells: tuple[int, int] | tuple[int, int, str]) -> dict[str, Any]:
    """A grader's run: per challenge (passed, failed) or (passed, failed, rule of every failure)."""
    challenges: dict[str, dict[str, int]] = {}
    failures: list[dict[str, str]] = []
    for challenge, cell in cells.items():
        passed, failed = cell[0], cell[1]
        rule = cell[2] if len(cell) > 2 else ""
        challenges[challenge] = {"passed": passed, "failed": failed, "not_started": 0}
        for number in range(failed):
            failures.append(
                {
                    "challenge": challenge,
                    "test": f"test_case[{number}-openai]",
                    "rule": str(rule),
                    "headline": f"complete() on scenario 'single_call' on openai broke a rule ({number})",
                    "text": f"The conversation as sent...\nRule: {rule}" if number == 0 else "",
                }
            )
    return {"source": "pytest", "challenges": challenges, "failures": failures}
