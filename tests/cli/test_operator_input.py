"""`sandbox serve` with bad operator input: every case ends in one `sandbox: error:` line that says
what to do, exit status 2, never a traceback or a hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOOD = """
name = "mine"
[[tools]]
name = "get_weather"
[[steps]]
calls = [{ name = "get_weather", arguments = { city = "Paris" } }]
[[steps]]
text = "done"
"""


def _one_error_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sandbox: error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'name = "x\xff\xfe"\n', "not UTF-8 text (byte 9 is invalid); save it as UTF-8."),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "its arrays or tables nest too deeply"),
        (GOOD.replace('text = "done"', 'text = "done"\nstop_reasons = 5').encode(), "step 1: 'stop_reasons' must be"),
        (GOOD.replace('text = "done"', "text = 5").encode(), "step 1: 'text' must be a string, got 5."),
        (GOOD.replace('arguments = { city = "Paris" }', 'arguments = "Paris"').encode(), "'arguments' must be a table"),
        (
            GOOD.replace('name = "mine"', 'name = "single_call"').encode(),
            "'single_call' is also the name of a built-in",
        ),
        (GOOD.encode() + b"[tool_outputs]\nx = 1\n", "tool_outputs.x must be a string, got 1."),
    ],
    ids=[
        "invalid-utf8",
        "deep-nesting",
        "stop-reasons-int",
        "text-int",
        "arguments-str",
        "shadows-builtin",
        "output-int",
    ],
)
def test_a_bad_scenario_file_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    (tmp_path / "x.toml").write_bytes(content)
    assert expected in _one_error_line(capsys, ["serve", "--scenarios", str(tmp_path)])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_a_device_named_toml_is_refused_without_hanging(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "x.toml"
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(target)
    else:
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero on this platform")
        target.symlink_to("/dev/zero")
    result = subprocess.run(
        [sys.executable, "-m", "sandbox", "serve", "--scenarios", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"sandbox: error: {target}: not a regular file (a folder, FIFO or device); name a *.toml file."
    ]


@pytest.mark.parametrize("port", ["70000", "-1", "http", "²"])
def test_a_port_out_of_range_is_one_error_line(capsys: pytest.CaptureFixture[str], port: str) -> None:
    line = _one_error_line(capsys, ["serve", f"--port={port}"])
    assert f"{port!r} is not a TCP port: use a number from 1 to 65535" in line


def test_a_port_in_use_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"sandbox: error: cannot listen on 127.0.0.1:{port}: Address already in use. Choose")
    assert len(err.strip().splitlines()) == 1
    assert out == "", "no banner for a server that never started"


def test_an_unknown_option_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unrecognized arguments: --nope" in _one_error_line(capsys, ["serve", "--nope"])


def test_a_host_that_is_not_this_machine_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    """192.0.2.1 is a documentation address (TEST-NET-1): numeric, so no name is ever looked up."""
    line = _one_error_line(capsys, ["serve", "--host", "192.0.2.1", "--port", "0"])
    assert "cannot listen on 192.0.2.1:0:" in line and "Use an address of this machine for --host" in line


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--workers", "0"], "is not a number of worker processes: use 1 to 256"),
        (["--workers", "two"], "is not a number of worker processes"),
        (["--workers", "2", "--store", "memory"], "Leave --store out (the workers then share a new SQLite file)"),
        (["--room", "--store", "redis://127.0.0.1:9/0"], "a room is one workshop on one machine"),
        (["--room", "--room-db", "/no-such-folder/room.db"], "SQLite cannot open that file"),
        (["--workers", "2", "--control"], "the control API reads and resets one process's journal"),
        (["--forwarded-allow-ips", "proxy.local"], "'proxy.local' is not an IP address or network"),
        (["--forwarded-allow-ips", "127.0.0.1,10.0.0.0/33"], "'10.0.0.0/33' is not an IP address or network"),
    ],
    ids=["no-workers", "words", "memory-store", "room-on-redis", "room-db", "control", "a-name", "a-bad-network"],
)
def test_worker_and_proxy_options_the_server_cannot_use_are_one_error_line(
    capsys: pytest.CaptureFixture[str], options: list[str], expected: str
) -> None:
    assert expected in _one_error_line(capsys, ["serve", "--port", "0", *options])
