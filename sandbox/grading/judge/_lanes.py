"""Grading lanes: a run's challenges graded by several grader processes at once, forked from this one
once collection is done; every report comes back here, and is reported here, in test order, as if this
process had run every test.

Why: a grading test is a ping-pong (the grader waits for the learner's code, which waits for the
sandbox's answer), so one lane used one core. Two lanes (the default) use both cores of a 2-core
machine; `--sandbox-lanes 3` adds one more than the cores, to fill the core a lane leaves while a
challenge waits on the provider's retry hints (10), at the cost of a third zygote. A single
challenge (`sandbox check N`, `sandbox watch`) stays in one lane.

Who grades what: each challenge is graded whole in one lane, in order, by the same code, with its own
worker, deadlines and hypothesis examples, so its verdicts are those of a one-lane run. This lane
takes the challenges from the first on; each forked lane, when it is free, asks this one for the
challenge with the most tests nobody took (`_Claims`), so the split follows how long each challenge
really takes, and what is left for the end is small.
A forked lane is a grader, not learner code: it is forked from this process (pytest, the collection
and the harness already loaded) before any learner code runs, adopts a zygote of its own, and sends
back only pytest's serialized reports (`pytest_report_to_serializable`) over a pipe no worker
inherits (`_lane`). Every hook that reports (the terminal, JUnit XML, `--report`, the room, the exit
status) runs here, on those reports. Whatever stops a run early (`-x`, `--maxfail`,
`--sandbox-first-failure`, `--stepwise`, `--pdb`), `-s` (learner output straight to the terminal),
xdist and `--collect-only` keep one lane. If a lane stops before it reported a challenge it took (it
never should), the tests it did not report run here.

May touch: forked copies of this process (through `_lane`), the pipes between them and this one, and
the reports it replays through this session's hooks.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ..boundary._zygotes import hand_over_spare_zygotes, reap_spare_zygotes
from ._lane import CLAIM, SIZE, run_lane

__all__ = ["Lanes", "lane_limit", "may_fork", "units"]


def lane_limit(config: pytest.Config) -> int:
    """How many lanes this run may grade in, known from its options before collection: `--sandbox-lanes`,
    at most one more than the machine's cores, and one when the run may stop early (`may_fork`)."""
    if not may_fork(config):
        return 1
    return max(1, min(int(config.getoption("sandbox_lanes")), (os.cpu_count() or 1) + 1))


def units(
    config: pytest.Config, items: Sequence[pytest.Item], source_of: Callable[[pytest.Item], Any]
) -> list[list[pytest.Item]]:
    """The run's implementations in test order, each with its tests, when the run may grade in several
    lanes; empty when it keeps one (a test that is not a challenge's, implementations interleaved by an
    explicit order of node ids, a single implementation)."""
    if lane_limit(config) < 2:
        return []
    found: list[list[pytest.Item]] = []
    seen: set[Any] = set()
    last: Any = None
    for item in items:
        source = source_of(item)
        if source is None:
            return []  # a test that is not a challenge's: keep the run as pytest would run it
        if found and source == last:
            found[-1].append(item)
            continue
        if source in seen:
            return []
        seen.add(source)
        last = source
        found.append([item])
    return found if len(found) >= 2 else []


def may_fork(config: pytest.Config) -> bool:
    """Whether this run may grade in several lanes (known from its options, before collection)."""
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


class _Claims:
    """Who grades which implementation. This lane takes them in test order (it reports as it grades, so it
    can only grade the next one); each forked lane, when it asks, the one with the most tests that nobody
    took (the last of those), so what is left for the end is small and the lanes end together."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self._lock = threading.Lock()
        self._sizes = list(sizes)
        self.owner: list[int | None] = [None] * len(sizes)
        """The lane grading each implementation: 0 for this one, K for the K-th forked lane."""
        self.owner[0] = 0  # before any lane can ask: the first lane starts at once, with the first one

    def here(self, unit: int) -> bool:
        """Take `unit` for this lane, if no forked lane took it (this lane asks in test order)."""
        with self._lock:
            if self.owner[unit] not in (None, 0):
                return False
            self.owner[unit] = 0
            return True

    def largest(self, lane: int) -> int:
        """The implementation with the most tests nobody took, now `lane`'s; -1 when none is left."""
        with self._lock:
            left = [unit for unit, owner in enumerate(self.owner) if owner is None]
            if not left:
                return -1
            unit = max(left, key=lambda unit: (self._sizes[unit], unit))
            self.owner[unit] = lane
            return unit


class _Lane:
    """A forked lane, seen from here: its process, its pipes, and its messages, read from the pipe as they
    come by a thread of this process (a lane that had to wait for this one to read would stall once the
    pipe's buffer filled), and held by the implementation they are about."""

    def __init__(self, number: int, pid: int, reports: int, claims: int) -> None:
        self.number = number
        self.pid = pid
        self.reports = reports
        self.claims = claims
        self.ready = False
        self.done = False
        self.ended = False
        self.why = ""
        self.current = -1
        """The implementation this lane grades now: its messages are about it."""
        self.held: dict[int, deque[tuple[Any, ...]]] = {}


class Lanes:
    """A pytest plugin, registered when `units` gave some: it runs the session's test loop."""

    def __init__(
        self,
        implementations: Sequence[Sequence[pytest.Item]],
        forked: int,
        in_child: Callable[[int], Callable[[], None]],
    ) -> None:
        self.units = [list(unit) for unit in implementations]
        self.forked = max(1, min(forked, len(self.units) - 1))
        self._in_child = in_child
        """Makes the K-th forked process a grader of its own (its own zygote); returns what ends it."""
        self._claims = _Claims([len(unit) for unit in self.units])
        self._lanes: list[_Lane] = []
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._told: set[int] = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        ordered = [item for unit in self.units for item in unit]
        following = dict(zip(map(id, ordered), [*ordered[1:], None], strict=True))
        clean = False
        try:
            self._fork(session, following)
            for number, unit in enumerate(self.units):
                if self._claims.here(number):
                    self._run_here(session, unit, following)
                else:
                    self._replay(session, number, following)
            clean = True
        finally:
            self._finish(clean)
        return True

    def _fork(self, session: pytest.Session, following: dict[int, pytest.Item | None]) -> None:
        _scan_local_constants()
        capture = session.config.pluginmanager.getplugin("capturemanager")
        mine: list[int] = []  # this process's ends of the pipes of the lanes forked so far
        for number in range(1, self.forked + 1):
            reports_read, reports_write = os.pipe()
            claims_read, claims_write = os.pipe()
            with warnings.catch_warnings():  # Python 3.12+: the zygotes' reader threads hold no lock a lane needs
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                for fd in (*mine, reports_read, claims_write):
                    os.close(fd)
                run_lane(session, self.units, following, (reports_write, claims_read), capture, self._in_child, number)
            os.close(reports_write)
            os.close(claims_read)
            mine += [reports_read, claims_write]
            self._lanes.append(_Lane(number, pid, reports_read, claims_write))
        hand_over_spare_zygotes(self.forked)
        for lane in self._lanes:
            thread = threading.Thread(target=self._read, args=(lane,), name=f"sandbox-lane-{lane.number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        with self._changed:  # each lane has let go of this process's capture files
            while not all(lane.ready or lane.ended for lane in self._lanes):
                self._changed.wait()
        for lane in self._lanes:
            if not lane.ready:
                lane.why = lane.why or "a grading lane did not start"

    # -- this lane's own tests, and the others' reports ------------------------------------------

    def _run_here(
        self, session: pytest.Session, items: Sequence[pytest.Item], following: dict[int, pytest.Item | None]
    ) -> None:
        for item in items:
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=following[id(item)])
            _check(session)

    def _replay(self, session: pytest.Session, number: int, following: dict[int, pytest.Item | None]) -> None:
        """Report implementation `number` as the lane that took it graded it; the tests it did not report
        (it ended first) run here."""
        owner = self._claims.owner[number]
        assert owner, "a unit this lane did not take was taken by a forked lane"
        lane = self._lanes[owner - 1]
        items = self.units[number]
        for index, item in enumerate(items):
            held = self._held(lane, number, item.nodeid)
            if held is None:
                self._stop(lane)
                reporter = session.config.pluginmanager.getplugin("terminalreporter")
                if reporter is not None and lane.number not in self._told:
                    self._told.add(lane.number)
                    reporter.write_line(f"sandbox: {lane.why}; its tests ran in the first lane instead.", yellow=True)
                self._run_here(session, items[index:], following)
                return
            _report(session, held)
            _check(session)

    def _held(self, lane: _Lane, number: int, nodeid: str) -> list[tuple[Any, ...]] | None:
        """The messages of test `nodeid` once the lane finished it; None if the lane ended first."""
        held: list[tuple[Any, ...]] = []
        with self._changed:
            queue = lane.held.setdefault(number, deque())
            while True:
                while not queue and not lane.ended:
                    self._changed.wait()
                if not queue:
                    lane.why = lane.why or "a grading lane ended early"
                    return None
                message = queue.popleft()
                held.append(message)
                if message[0] == "finish" and message[1] == nodeid:
                    return held

    def _read(self, lane: _Lane) -> None:
        buffer = b""
        try:
            while chunk := os.read(lane.reports, 1 << 20):
                buffer += chunk
                while len(buffer) >= SIZE.size:
                    size = SIZE.size + SIZE.unpack_from(buffer)[0]
                    if len(buffer) < size:
                        break  # the rest of this message is still on its way
                    # a grader's pickle, never learner code's: the pipe is inherited by no worker
                    message: tuple[Any, ...] = pickle.loads(buffer[SIZE.size : size])
                    buffer = buffer[size:]
                    self._take(lane, message)
        except OSError:
            pass
        finally:
            with self._changed:
                lane.ended = True
                self._changed.notify_all()

    def _take(self, lane: _Lane, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == CLAIM:
            unit = self._claims.largest(lane.number)
            with self._changed:
                lane.current = unit
            try:
                os.write(lane.claims, SIZE.pack(unit + 1))  # 0: nothing is left
            except OSError:
                pass
            return
        with self._changed:
            if kind == "ready":
                lane.ready = True
            elif kind == "done":
                lane.done = True
            elif kind == "error":
                lane.why = message[1]
                lane.ended = True
            else:
                lane.held.setdefault(lane.current, deque()).append(message)
            self._changed.notify_all()

    # -- the end --------------------------------------------------------------------------------

    def _stop(self, lane: _Lane) -> None:
        if lane.pid:
            try:
                os.kill(lane.pid, signal.SIGKILL)  # its zygote sees its control socket close, and sweeps
            except OSError:
                pass
            self._reap(lane)

    def _reap(self, lane: _Lane) -> None:
        if lane.pid:
            try:
                os.waitpid(lane.pid, 0)
            except ChildProcessError:
                pass
            lane.pid = 0

    def _finish(self, clean: bool) -> None:
        """Wait for every lane to end (each has swept its workers and closed its zygote by then), or stop
        them when this lane did not end cleanly (Ctrl-C)."""
        if clean:
            with self._changed:
                while not all(lane.done or lane.ended for lane in self._lanes):
                    self._changed.wait()
            for lane in self._lanes:
                if lane.done:
                    self._reap(lane)
        for lane in self._lanes:
            self._stop(lane)
        for thread in self._threads:
            thread.join(30)
        for lane in self._lanes:
            for fd in (lane.reports, lane.claims):
                os.close(fd)
        self._lanes.clear()
        reap_spare_zygotes()


def _report(session: pytest.Session, held: list[tuple[Any, ...]]) -> None:
    """One test's messages from another lane, through this session's hooks."""
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


def _scan_local_constants() -> None:
    """Hypothesis mixes constants of every loaded local module (the sandbox's own source, in an editable
    install) into what it draws, scanning the modules on the first draw of a process: scanned here, once,
    the other lanes inherit the scan instead of repeating it (60-70 ms). The same modules are loaded
    either way, so the lanes draw from the same constants as one lane would (`preload` loaded them)."""
    try:
        from hypothesis.internal.conjecture import providers

        scan = providers._get_local_constants
    except (ImportError, AttributeError):  # pragma: no cover - another hypothesis: each lane scans its own
        return
    scan()


def _check(session: pytest.Session) -> None:
    if session.shouldfail:
        raise session.Failed(session.shouldfail)
    if session.shouldstop:
        raise session.Interrupted(session.shouldstop)
