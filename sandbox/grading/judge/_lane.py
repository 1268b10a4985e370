"""A forked grading lane (`_lanes`), in its own process: it asks the first lane for an implementation to
grade, grades it whole, sends every report, and asks again until none is left; then it ends its
workers and zygote, and exits without this process's teardown (the first lane's atexit handlers would
close its zygote).

May touch: its own pytest capture and terminal (the first lane's capture files are shared with it:
it replaces them before anything is captured), its zygote (through `in_child`), and its two pipes:
the messages it sends, and the claims it is answered.
"""

from __future__ import annotations

import os
import pickle
import struct
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest

__all__ = ["CLAIM", "SIZE", "run_lane"]

SIZE = struct.Struct("!I")
"""Each message's length before it; each claim's answer alone (the implementation's number plus one)."""
CLAIM = "claim"


class _Forwarder:
    """A forked lane's only reporter: each hook that reports goes down the pipe, in order."""

    def __init__(self, config: pytest.Config, pipe: int) -> None:
        self.config = config
        self.pipe = pipe

    def send(self, *message: Any) -> None:
        data = pickle.dumps(message)
        view = memoryview(SIZE.pack(len(data)) + data)
        while view:
            view = view[os.write(self.pipe, view) :]

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.send("start", nodeid, location)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.send("report", self.config.hook.pytest_report_to_serializable(config=self.config, report=report))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.send("finish", nodeid, location)

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage, when: str, nodeid: str) -> None:
        message = warning_message.message
        text = str(message.args[0]) if isinstance(message, Warning) and message.args else str(message)
        where = (warning_message.filename, warning_message.lineno)
        self.send("warning", warning_message.category, text, *where, when, nodeid)


def _claim(forwarder: _Forwarder, answers: int) -> int:
    """The implementation the first lane gives this one next; -1 when none is left (or it is gone)."""
    forwarder.send(CLAIM)
    data = b""
    while len(data) < SIZE.size:
        chunk = os.read(answers, SIZE.size - len(data))
        if not chunk:
            return -1
        data += chunk
    return int(SIZE.unpack(data)[0]) - 1


def run_lane(
    session: pytest.Session,
    units: Sequence[Sequence[pytest.Item]],
    following: dict[int, pytest.Item | None],
    pipes: tuple[int, int],
    capture: Any,
    in_child: Callable[[int], Callable[[], None]],
    number: int,
) -> None:
    """Lane `number`: grade the implementations the first lane gives it, send every report, exit."""
    code = 0
    reports, answers = pipes
    forwarder = _Forwarder(session.config, reports)
    try:
        # Capture files of its own: the inherited ones are the first lane's open files, offsets shared.
        if capture is not None:
            capture.stop_global_capturing()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        if capture is not None:
            capture.start_global_capturing()
        manager = session.config.pluginmanager
        terminal = manager.get_plugin("terminalreporter")
        if terminal is not None:
            manager.unregister(terminal)
        end = in_child(number)
        try:
            manager.register(forwarder, "sandbox-lane")
            forwarder.send("ready")
            while (unit := _claim(forwarder, answers)) >= 0:
                for item in units[unit]:
                    item.config.hook.pytest_runtest_protocol(item=item, nextitem=following[id(item)])
        finally:
            end()  # every worker of this lane dead before the first lane checks what they could touch
        forwarder.send("done")
    except BaseException:  # noqa: B036 - whatever stopped it, the first lane runs the rest
        code = 1
        try:
            forwarder.send("error", f"a grading lane stopped: {traceback.format_exc(limit=-3)}")
        except OSError:
            pass
    finally:
        os._exit(code)
