"""`sandbox record` and `sandbox serve --port 0 --port-file --control` as a user starts them: real
processes on 127.0.0.1, stopped with Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandbox
from sandbox import skyl
from sandbox.cli import main
from tests.conftest import lesson_loop, scenario_request, scripted_run

pytestmark = pytest.mark.slow


def _start(*argv: str, port_file: Path) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox", *argv, "--port", "0", "--port-file", str(port_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"sandbox {argv[0]} did not start: {process.communicate()[0]}")
        time.sleep(0.05)
    return process, int(port_file.read_text())


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=20)
    assert process.returncode == 0, out
    return out


def test_serve_on_port_0_prints_and_writes_the_port_it_bound(tmp_path: Path) -> None:
    process, port = _start("serve", "--control", port_file=tmp_path / "port")
    with skyl.Client("openai", base_url=f"http://127.0.0.1:{port}/v1") as client:
        assert client.complete(scenario_request("plain_text")).text() == "Hello! No tools needed for that."
    out = _stop(process)
    assert port != 0
    assert f"Serving the sandbox at http://127.0.0.1:{port} (Ctrl-C to stop)." in out
    assert f"Control API at http://127.0.0.1:{port}/_sandbox/" in out and "Authorization: Bearer " in out


def test_record_writes_the_scenario_and_the_exchanges_then_says_where(tmp_path: Path) -> None:
    with sandbox.serving() as upstream:
        process, port = _start(
            "record", "--upstream", upstream.url, "--out", str(tmp_path), "--name", "support", port_file=tmp_path / "p"
        )
        with skyl.Client("openai-responses", base_url=f"http://127.0.0.1:{port}/v1") as client:
            lesson_loop(client, scenario_request("single_call"), scripted_run("single_call"), stream=True)
        out = _stop(process)
    assert f"Recording at http://127.0.0.1:{port}, forwarding to {upstream.url}" in out
    assert f"Recorded 2 exchange(s): {tmp_path / 'support.toml'}." in out
    assert sandbox.load_scenario(tmp_path / "support.toml").name == "support"
    assert len((tmp_path / "support.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["record", "--upstream", "api.openai.com"], "--upstream api.openai.com: give the provider's base URL"),
        (["record", "--upstream", "http://127.0.0.1:9", "--name", "a b"], "--name a b: a scenario name is 1 to 64"),
        (["serve", "--control-token", "x" * 20], "--control-token is the control API's token: add --control"),
        (["serve", "--control", "--control-token", "short"], "--control-token: use at least 16 characters"),
        (["import", "a.yaml", "b.yaml", "--name", "x"], "--name names one cassette's scenario"),
    ],
)
def test_record_and_control_options_have_clear_errors(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert error in capsys.readouterr().err
