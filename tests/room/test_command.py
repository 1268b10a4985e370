"""`sandbox room` and `sandbox serve --room` as an instructor runs them; `sandbox check --room` as a learner does."""

from __future__ import annotations

import csv
import io
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from sandbox.cli._room import reachable_hosts
from sandbox.room._export import folder_name
from tests.room_server import TITLES, Learner, run, serving_room

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _banner(process: subprocess.Popen[str]) -> str:
    lines: list[str] = []
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Their own loops" in line:
            return "".join(lines)
    raise AssertionError(f"no room banner: {''.join(lines)}")


def _get(url: str) -> httpx.Response:
    """The banner prints once the port is bound; the server listens a moment later."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, timeout=10, follow_redirects=True)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("words", [["room"], ["serve", "--room"]], ids=["room", "serve-room"])
def test_room_command_prints_the_page_and_the_join_line_and_keeps_its_key(tmp_path: Path, words: list[str]) -> None:
    db = tmp_path / "room.db"
    keys = []
    for _ in range(2):  # a restart on the same --room-db keeps the room, and its URL
        port = _free_port()
        command = [sys.executable, "-m", "sandbox", *words, "--port", str(port), "--room-db", str(db)]
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            banner = _banner(process)
            page = re.search(r"Instructor's page \(keep the key to yourself\): (\S+)", banner)
            assert page is not None, banner
            assert f"pytest challenges/ --room http://127.0.0.1:{port}/room --name 'THEIR NAME'" in banner
            assert f"sandbox check --room http://127.0.0.1:{port}/room" in banner
            assert f"SANDBOX_ROOM=http://127.0.0.1:{port}/room" in banner
            assert f"Serving the sandbox at http://127.0.0.1:{port}" in banner
            shown = _get(page.group(1))
            assert shown.status_code == 200 and "Workshop room" in shown.text
            assert "02_bounded_loop: The loop, bounded" in shown.text, "the columns come from ./challenges"
            keys.append(page.group(1).split("key=")[1])
            with httpx.stream("GET", f"http://127.0.0.1:{port}/room/api/events", params={"key": keys[-1]}) as live:
                events = live.iter_lines()
                assert next(line for line in events if line.startswith("data: "))  # the page's first parts
                httpx.post(f"http://127.0.0.1:{port}/room/api/join", json={"name": f"ada {len(keys)}"}, timeout=10)
                joined = next(line for line in events if line.startswith("data: ") and f"ada {len(keys)}" in line)
                assert f"ada {len(keys)}" in json.loads(joined[6:])["rows"], "the join reached the open page"
                process.send_signal(signal.SIGINT)  # with the page's stream still open
                rest = list(events)  # the server ends the stream as it shuts down
            assert not any("data: " in line for line in rest[1:]), rest
        finally:
            process.send_signal(signal.SIGINT)
            out, _ = process.communicate(timeout=60)
        assert "destroyed but it is pending" not in out and "shutdown: cut" not in out, out[-2000:]
    assert keys[0] == keys[1]


def test_room_command_bad_option_has_clear_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox", "room", "--stuck-runs", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("sandbox: error: --stuck-runs takes a whole number from 1")


@pytest.mark.slow
def test_check_room_joins_and_posts(tmp_path: Path) -> None:
    course = tmp_path / "course" / "challenges"  # a learner's clone: the checkout's state file stays as it is
    course.mkdir(parents=True)
    shutil.copy(ROOT / "challenges" / "hints.toml", course)
    shutil.copytree(ROOT / "challenges" / "01_apply_tool_results", course / "01_apply_tool_results")
    with serving_room(tmp_path / "room.db") as served:
        environment = {**os.environ, "SANDBOX_ROOM_CACHE": str(tmp_path / "rooms.json")}
        environment.pop("SANDBOX_ROOM", None)
        environment.pop("SANDBOX_ROOM_NAME", None)
        done = subprocess.run(
            [sys.executable, "-m", "sandbox", "check", "1", "--room", served.room, "--name", "Edsger"],
            cwd=course.parent,
            capture_output=True,
            text=True,
            env=environment,
            timeout=300,
        )
        assert "room: this run is on the room's page as 'Edsger'" in done.stdout, done.stdout[-1500:]
        (row,) = served.instructor("/api/state").json()["learners"]
        assert row["name"] == "Edsger" and list(row["cells"]) == ["01_apply_tool_results"]
        missing = subprocess.run(
            [sys.executable, "-m", "sandbox", "check", "1", "--room", served.room],
            cwd=course.parent,
            capture_output=True,
            text=True,
            env=environment,
            timeout=300,
        )
        assert missing.returncode == 2 and "--name 'YOUR NAME'" in missing.stderr


def test_room_banner_names_the_addresses_learners_can_reach() -> None:
    """For --host 0.0.0.0 the banner prints this machine's own addresses (it printed THIS-MACHINE)."""
    hosts = reachable_hosts("0.0.0.0")
    assert hosts and "THIS-MACHINE" not in hosts
    for host in hosts:
        address = ipaddress.ip_address(host)
        assert not address.is_loopback or hosts == ["127.0.0.1"], hosts
        with socket.socket() as sock:
            sock.bind((host, 0))  # an address of this machine: binding proves it, and sends nothing
    assert reachable_hosts("10.1.2.3") == ["10.1.2.3"], "a named --host is the address learners use"


def test_verify_records_the_instructors_grading_over_what_a_learner_claimed(tmp_path: Path) -> None:
    """`curl` posting "all passed" gave Mallory 10/10; `sandbox verify` grades her submission itself."""
    submissions = tmp_path / "submissions"
    for name, source in (("Mallory", "tests/mutants/01_assistant_text"), ("Ada", "solutions")):
        (submissions / name).mkdir(parents=True)
        shutil.copy(ROOT / source / "01_apply_tool_results.py", submissions / name)
    with serving_room(tmp_path / "room.db") as served:
        mallory = Learner.join(served.room, "Mallory")
        Learner.join(served.room, "Ada")
        mallory.post(run(**{challenge: (4, 0) for challenge in TITLES}))  # "all passed", no grader run
        done = subprocess.run(
            [sys.executable, "-m", "sandbox", "verify", str(submissions), "1", "--room", served.room,
             "--key", served.service.key, "--isolation", "auto"],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Mallory: 0/" in done.stdout and "recorded in the room as verified" in done.stdout
        rows = {row["name"]: row for row in served.instructor("/api/state").json()["learners"]}
        assert rows["Mallory"]["verified"]["01_apply_tool_results"]["status"] == "failing"
        assert rows["Ada"]["verified"]["01_apply_tool_results"]["status"] == "passed"
        archive = zipfile.ZipFile(io.BytesIO(served.instructor("/export/results.zip").content))
        results = json.loads(archive.read(f"{folder_name('Mallory')}/results.json"))
        first = results["tests"][0]
        assert first["score"] == 0.0 and "(verified)" in first["output"]
        assert "(self-reported)" in results["tests"][1]["output"]
        assert results["extra_data"]["verified_challenges"] == ["01_apply_tool_results"]
        sources = {
            row["challenge"]: row["source"]
            for row in csv.DictReader(io.StringIO(served.instructor("/export.csv").text))
            if row["learner"] == "Mallory"
        }
        assert sources == {
            "01_apply_tool_results": "verified",
            "02_bounded_loop": "self-reported",
            "03_several_calls": "self-reported",
        }


def test_verify_without_the_key_has_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ada").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "sandbox", "verify", str(tmp_path), "--room", "http://127.0.0.1:9/room"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={name: value for name, value in os.environ.items() if name != "SANDBOX_ROOM_KEY"},
    )  # fmt: skip
    assert done.returncode == 2 and "needs the instructor's key" in done.stderr
