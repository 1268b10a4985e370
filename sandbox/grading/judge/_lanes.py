"""Two lanes of challenge tests: the run's last challenges graded in a second grader process, forked
once collection is done, while this one grades the first; their reports come back and are reported
here, in test order, as if this process had run them.

Why: a grading test is a ping-pong (the grader waits for the learner's code, which waits for the
sandbox's answer), so one run used one core of two. A lane per core halves the wall time of a full
run; a single challenge (`sandbox check N`, `sandbox watch`) stays in one lane.

What stays the same: each challenge is graded whole in one lane, in order, by the same code, with its
own worker, deadlines and hypothesis examples, so its verdicts are those of a one-lane run. The
second lane is a grader, not learner code: it is forked from this process (pytest, the collection and
the harness already loaded) before any learner code runs, starts its own zygote, and sends back only
pytest's serialized reports (`pytest_report_to_serializable`) over a pipe no worker inherits. Every
hook that reports (the terminal, JUnit XML, `--report`, the room, the exit status) runs here, on
those reports. Whatever stops a run early (`-x`, `--maxfail`, `--sandbox-first-failure`,
`--stepwise`, `--pdb`), `-s` (learner output straight to the terminal), xdist and `--collect-only`
keep one lane. If the second lane stops before the end (it never should), the tests it did not
report run here.

May touch: a forked copy of this process (its pytest capture, its terminal, its zygote, its exit),
the pipe between the two, and the reports it replays through this session's hooks.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import threading
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ..boundary._zygotes import hand_over_spare_zygote, reap_spare_zygote

__all__ = ["Lanes", "may_fork", "second_lane"]

_SIZE = struct.Struct("!I")


def second_lane(
    config: pytest.Config, items: Sequence[pytest.Item], source_of: Callable[[pytest.Item], Any]
) -> list[pytest.Item]:
    """The items the second lane grades: the run's last implementations, about 40 % of its tests (the
    first lane also reports them all), whole implementations only. Empty when the run keeps one lane."""
    if not may_fork(config):
        return []
    sources: list[Any] = []
    counts: dict[Any, int] = {}
    for item in items:
        source = source_of(item)
        if source is None:
            return []  # a test that is not a challenge's: keep the run as pytest would run it
        if source not in counts:
            sources.append(source)
        counts[source] = counts.get(source, 0) + 1
    if len(sources) < 2:
        return []
    tail: set[Any] = set()
    taken = 0
    for source in reversed(sources[1:]):
        if tail and taken + counts[source] > 0.4 * len(items):
            break
        tail.add(source)
        taken += counts[source]
    first = next(index for index, item in enumerate(items) if source_of(item) in tail)
    if any(source_of(item) not in tail for item in items[first:]):
        return []  # implementations interleaved (an explicit order of node ids): one lane
    return list(items[first:])


def may_fork(config: pytest.Config) -> bool:
    """Whether this run may grade in two lanes (known from its options, before collection)."""
    option = config.option
    return (
        hasattr(os, "fork")
        and config.getoption("sandbox_lanes") > 1
        and (os.cpu_count() or 1) > 1
        and not getattr(config, "workerinput", None)  # an xdist worker
        and not getattr(option, "numprocesses", None)
        and not option.collectonly
        and not getattr(option, "exitfirst", False)
        and not getattr(option, "maxfail", 0)
        and not getattr(option, "usepdb", False)
        and not getattr(option, "stepwise", False)
        and not getattr(option, "stepwise_skip", False)
        and getattr(option, "capture", "fd") != "no"
        and not config.getoption("sandbox_first_failure")
    )


class Lanes:
    """A pytest plugin, registered when `second_lane` gave items: it runs the session's test loop."""

    def __init__(self, theirs: Sequence[pytest.Item], in_child: Callable[[], Callable[[], None]]) -> None:
        self.theirs = list(theirs)
        self._in_child = in_child
        """Makes the forked process a grader of its own (its own zygote); returns what ends it."""
        self._pid = 0
        self._inbox: _Inbox | None = None
        self._ended = False
        self._fallback = ""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        theirs = {id(item) for item in self.theirs}
        mine = [item for item in session.items if id(item) not in theirs]
        following = {id(item): nextitem for item, nextitem in _with_next(mine)}
        self._fork(session)
        clean = False
        try:
            for index, item in enumerate(session.items):
                if id(item) in theirs:
                    if self._ended or not self._replay(session, item):
                        self._run_here(session, session.items[index:])
                        break
                else:
                    item.config.hook.pytest_runtest_protocol(item=item, nextitem=following[id(item)])
                _check(session)
            clean = True
        finally:
            self._finish(clean)
        return True

    # -- the first lane ---------------------------------------------------------------------------

    def _fork(self, session: pytest.Session) -> None:
        _scan_local_constants()
        read, write = os.pipe()
        capture = session.config.pluginmanager.getplugin("capturemanager")
        with warnings.catch_warnings():  # Python 3.12+: the zygote's reader thread holds no lock the child needs
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(session, self.theirs, write, capture, self._in_child)
        os.close(write)
        hand_over_spare_zygote()
        self._pid, self._inbox = pid, _Inbox(read)
        if self._message() != ("ready",):  # the child has let go of this process's capture files
            self._ended = True
            self._fallback = "the second grading lane did not start"

    def _replay(self, session: pytest.Session, item: pytest.Item) -> bool:
        """Report `item` as the second lane ran it; False if the lane ended before it finished."""
        held: list[tuple[Any, ...]] = []
        while True:
            message = self._message()
            if message is None or message[0] == "error":
                self._ended = True
                self._fallback = message[1] if message else "the second grading lane ended early"
                return False
            held.append(message)
            if message[0] == "finish" and message[1] == item.nodeid:
                break
        hook = session.config.hook
        for message in held:
            if message[0] == "start":
                hook.pytest_runtest_logstart(nodeid=message[1], location=message[2])
            elif message[0] == "report":
                report = hook.pytest_report_from_serializable(config=session.config, data=message[1])
                hook.pytest_runtest_logreport(report=report)
            elif message[0] == "warning":
                category, text, filename, lineno, when, nodeid = message[1:]
                recorded = warnings.WarningMessage(category(text), category, filename, lineno)
                hook.pytest_warning_recorded(warning_message=recorded, when=when, nodeid=nodeid, location=None)
            elif message[0] == "finish":
                hook.pytest_runtest_logfinish(nodeid=message[1], location=message[2])
        return True

    def _run_here(self, session: pytest.Session, rest: Sequence[pytest.Item]) -> None:
        """The second lane stopped: the tests it did not report run in this process, in order."""
        self._stop()
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"sandbox: {self._fallback}; its tests ran in the first lane instead.", yellow=True)
        for item, nextitem in _with_next(rest):
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            _check(session)

    def _message(self) -> tuple[Any, ...] | None:
        return self._inbox.next() if self._inbox is not None else None

    def _stop(self) -> None:
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)  # its zygote sees its control socket close, and sweeps
            except OSError:
                pass
            self._reap()

    def _reap(self) -> None:
        if self._pid:
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            self._pid = 0
        if self._inbox is not None:
            self._inbox.close()  # the lane has ended: its end of the pipe is closed
            self._inbox = None

    def _finish(self, clean: bool) -> None:
        """Wait for the second lane to end (it has swept its workers and closed its zygote by then), or stop
        it when this lane did not end cleanly (Ctrl-C)."""
        if clean and self._pid and not self._ended and self._message() == ("done",):
            self._reap()
        self._stop()
        reap_spare_zygote()


class _Inbox:
    """The second lane's messages, read from the pipe as they come by a thread of this process: a lane
    that had to wait for this one to read would stall once the pipe's buffer (64 KiB) filled."""

    def __init__(self, pipe: int) -> None:
        self._pipe = pipe
        self._messages: deque[tuple[Any, ...]] = deque()
        self._ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="sandbox-second-lane", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._pipe, 1 << 20):
                buffer += chunk
                while len(buffer) >= _SIZE.size:
                    size = _SIZE.size + _SIZE.unpack_from(buffer)[0]
                    if len(buffer) < size:
                        break  # the rest of this message is still on its way
                    # a grader's pickle, never learner code's: the pipe is inherited by no worker
                    message: tuple[Any, ...] = pickle.loads(buffer[_SIZE.size : size])
                    buffer = buffer[size:]
                    with self._changed:
                        self._messages.append(message)
                        self._changed.notify()
        except OSError:
            pass
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify()

    def next(self) -> tuple[Any, ...] | None:
        """The next message, waiting for it; None once the lane has ended and every message was taken."""
        with self._changed:
            while not self._messages and not self._ended:
                self._changed.wait()
            return self._messages.popleft() if self._messages else None

    def close(self) -> None:
        self._thread.join(30)
        os.close(self._pipe)


def _scan_local_constants() -> None:
    """Hypothesis mixes constants of every loaded local module (the sandbox's own source, in an editable
    install) into what it draws, scanning the modules on the first draw of a process: scanned here, once,
    the second lane inherits the scan instead of repeating it (60-70 ms). The same modules are loaded
    either way, so the lanes draw from the same constants as one lane would (`preload` loaded them)."""
    try:
        from hypothesis.internal.conjecture import providers

        scan = providers._get_local_constants
    except (ImportError, AttributeError):  # pragma: no cover - another hypothesis: each lane scans its own
        return
    scan()


def _with_next(items: Sequence[pytest.Item]) -> list[tuple[pytest.Item, pytest.Item | None]]:
    return list(zip(items, [*items[1:], None], strict=True))


def _check(session: pytest.Session) -> None:
    if session.shouldfail:
        raise session.Failed(session.shouldfail)
    if session.shouldstop:
        raise session.Interrupted(session.shouldstop)


# -- the second lane ------------------------------------------------------------------------------


class _Forwarder:
    """The second lane's only reporter: each hook that reports goes down the pipe, in order."""

    def __init__(self, config: pytest.Config, pipe: int) -> None:
        self.config = config
        self.pipe = pipe

    def send(self, *message: Any) -> None:
        data = pickle.dumps(message)
        os.write(self.pipe, _SIZE.pack(len(data)))
        view = memoryview(data)
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


def _child(
    session: pytest.Session,
    items: Sequence[pytest.Item],
    pipe: int,
    capture: Any,
    in_child: Callable[[], Callable[[], None]],
) -> None:
    """The second lane: grade `items`, send every report, then exit without this process's teardown
    (the first lane's atexit handlers would close its zygote)."""
    code = 0
    forwarder = _Forwarder(session.config, pipe)
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
        end = in_child()
        try:
            manager.register(forwarder, "sandbox-second-lane")
            forwarder.send("ready")
            for item, nextitem in _with_next(items):
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            end()  # every worker of this lane dead before the first lane checks what they could touch
        forwarder.send("done")
    except BaseException:  # noqa: B036 - whatever stopped it, the first lane runs the rest
        code = 1
        try:
            forwarder.send("error", f"the second grading lane stopped: {traceback.format_exc(limit=-3)}")
        except OSError:
            pass
    finally:
        os._exit(code)
