"""`sandbox serve --workers N`: N processes on one port, answering as one. Kept state lives in the
store they share (a new SQLite file unless `--store` names one), so a loop whose requests land on
different workers, or on a worker started after another died, goes on; SIGTERM stops them all."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import sandbox
from tests.adapters.test_serve_command import _free_port
from tests.sdk_drivers import in_process_options, openai_responses_kept

pytestmark = pytest.mark.slow


def _workers_of(parent: int) -> list[int]:
    """The pids of `parent`'s worker processes (multiprocessing's spawned children, not its tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in command:
            found.append(int(entry.name))
    return sorted(found)


def _until(check: object, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:g} s for {what}")
        time.sleep(0.05)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def two_workers() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "serve", "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: len(_workers_of(process.pid)) == 2 and _healthy(base), "two workers to answer")
        yield base, process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
        assert process.stdout is not None
        process.stdout.close()


def test_kept_state_loops_whose_requests_land_on_either_worker_all_finish(
    two_workers: tuple[str, subprocess.Popen[str]],
) -> None:
    base, _ = two_workers
    closing = {"connection": "close"}  # a new connection a request: the kernel hands each to either worker
    answers = {openai_responses_kept("multi_step", base_url=f"{base}/v1", default_headers=closing) for _ in range(12)}
    in_process = openai_responses_kept("multi_step", **in_process_options("openai", sandbox.httpx2_transport()))
    assert answers == {in_process}


def test_a_stored_response_outlives_every_worker_that_was_running(
    two_workers: tuple[str, subprocess.Popen[str]],
) -> None:
    """Both workers killed: the server starts two new ones, which find the response in the store."""
    base, process = two_workers
    ask = {
        "model": "single_call",
        "input": "What's the weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}],
    }
    answer = httpx.post(f"{base}/v1/responses", json=ask).json()
    old = _workers_of(process.pid)
    for pid in old:
        os.kill(pid, signal.SIGKILL)
    _until(lambda: len(set(_workers_of(process.pid)) - set(old)) == 2 and _healthy(base), "two new workers")
    call = next(item for item in answer["output"] if item["type"] == "function_call")
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C, clear"}]
    final = httpx.post(f"{base}/v1/responses", json={**ask, "previous_response_id": answer["id"], "input": outputs})
    assert final.status_code == 200, final.text
    assert final.json()["previous_response_id"] == answer["id"]
    assert process.poll() is None


def test_sigterm_stops_every_worker_and_removes_the_new_store(
    two_workers: tuple[str, subprocess.Popen[str]],
) -> None:
    base, process = two_workers
    workers = _workers_of(process.pid)
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0
    assert process.stdout is not None
    banner = process.stdout.read()
    store = re.search(r"sharing kept state in sqlite:///(\S+)", banner)
    assert store is not None, banner
    assert not Path(store[1]).parent.exists()
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    assert not _healthy(base)
