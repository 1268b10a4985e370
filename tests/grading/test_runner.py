"""Running learner code in worker processes: values and errors come back as data, hangs and deaths end
the worker (and everything it started), printed output is kept to a readable size."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import skyl
from sandbox.grading.boundary._implementations import Implementations
from sandbox.grading.boundary._marshal import RemoteError, error_from_data, read_value, to_data
from sandbox.grading.boundary._protocol import ImplementationError
from sandbox.grading.boundary._runner import OUTPUT_LIMIT, TimedOut, WorkerDied, WorkerProcess, Zygote
from sandbox.grading.judge._challenge import Deadlines

MODULE = """
import os, sys, time

def double(x):
    return x * 2

def fails():
    return {}["missing"]

async def later(x):
    return x + 1

def response():
    from sandbox import skyl
    return skyl.Response(skyl.assistant_text("hi"), skyl.StopReason.END_TURN)

def spin():
    while True:
        try:
            time.sleep(0.001)
        except BaseException:
            pass

def detach_and_spin():
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
    while True:
        pass

def exits():
    os._exit(7)

def noisy():
    print("x" * 100_000)
    sys.stderr.write("warning\\n")
    return None

def odd():
    return object()
"""


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    started = Zygote()
    yield started
    started.close()


@pytest.fixture
def worker(zygote: Zygote, tmp_path: Path) -> Iterator[WorkerProcess]:
    module = tmp_path / "learner.py"
    module.write_text(MODULE)
    started = WorkerProcess(zygote)
    reply = started.request({"op": "load", "path": str(module), "shown_as": "learner.py"}, 30)
    assert reply["op"] == "loaded", reply
    started.functions = reply["functions"]
    yield started
    started.close()


def call(worker: WorkerProcess, function: str, *args: object, seconds: float = 30) -> dict[str, object]:
    specs = [{"kind": "value", "value": to_data(arg)} for arg in args]
    message = {"op": "call", "function": function, "args": specs, "base": "http://127.0.0.1:9/x", "provider": "openai"}
    return worker.request({**message, "mode": "sync"}, seconds)


def test_a_value_comes_back_as_data(worker: WorkerProcess) -> None:
    assert worker.functions == {
        "double": False,
        "fails": False,
        "later": True,
        "response": False,
        "spin": False,
        "detach_and_spin": False,
        "exits": False,
        "noisy": False,
        "odd": False,
    }
    assert read_value(call(worker, "double", 21)["value"]) == 42
    assert read_value(call(worker, "later", 1)["value"]) == 2
    response = read_value(call(worker, "response")["value"])
    assert isinstance(response, skyl.Response) and response.text() == "hi"


def test_a_value_of_any_other_type_prints_as_it_did(worker: WorkerProcess) -> None:
    value = read_value(call(worker, "odd")["value"])
    assert type(value).__name__ == "object" and repr(value).startswith("<object object at")


def test_an_error_comes_back_with_the_learners_frames(worker: WorkerProcess) -> None:
    error = error_from_data(call(worker, "fails")["error"])
    assert isinstance(error, RemoteError) and type(error).__name__ == "KeyError" and str(error) == "'missing'"
    assert [(frame.name, frame.line) for frame in error.frames] == [("fails", 'return {}["missing"]')]


def test_a_hang_times_out_and_the_worker_and_its_detached_children_die(worker: WorkerProcess, zygote: Zygote) -> None:
    with pytest.raises(TimedOut):
        call(worker, "spin", seconds=0.3)
    assert zygote.status(worker.pid, wait=10) is not None, "the zygote reaped the killed worker"


def test_a_worker_that_exits_is_described(worker: WorkerProcess) -> None:
    with pytest.raises(WorkerDied, match=r"its process exited with code 7"):
        call(worker, "exits")


def test_printed_output_is_kept_to_a_readable_size(worker: WorkerProcess) -> None:
    call(worker, "noisy")
    out, err = worker.output()
    assert len(out) <= OUTPUT_LIMIT and "characters of output cut: print less" in out
    assert err == "warning\n"
    assert worker.output() == ("", ""), "each call's output is handed over once"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc")
def test_detached_processes_die_with_the_zygote(tmp_path: Path) -> None:
    module = tmp_path / "learner.py"
    module.write_text(MODULE)
    zygote = Zygote()
    worker = WorkerProcess(zygote)
    worker.request({"op": "load", "path": str(module), "shown_as": "learner.py"}, 30)
    with pytest.raises(TimedOut):
        call(worker, "detach_and_spin", seconds=0.5)
    mother = zygote._process.pid
    survivors = [pid for pid in _processes() if pid != mother and _cmdline(pid) == _cmdline(mother)]
    assert survivors, "the detached child is running before the zygote closes"
    zygote.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in survivors) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in survivors if _alive(pid)], "a detached child outlived the grader's workers"


def test_an_import_error_is_remembered(tmp_path: Path) -> None:
    module = tmp_path / "broken.py"
    module.write_text("raise ValueError('no')\n")
    implementations = Implementations()
    try:
        for _ in range(2):
            with pytest.raises(ImplementationError, match=r"broken\.py raised ValueError while being imported: no"):
                implementations.get(module, "broken.py", 30)
    finally:
        implementations.close()


def test_after_a_hang_the_rest_of_that_challenge_gets_a_short_deadline() -> None:
    deadlines = Deadlines(5.0)
    deadlines.record_hang("02_bounded_loop")
    assert deadlines.for_challenge("02_bounded_loop") == 0.5
    assert deadlines.for_challenge("03_several_calls") == 5.0


def _processes() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
    return " Z " not in stat  # a zombie is dead, only not yet reaped
