"""The challenge machinery of one `pytest challenges/` session: the `Harness` the plugin registers
once challenge tests were collected.

It holds the implementations (the workers learner code runs in), the deadlines, each test's verdict,
and the end of the run: every worker dead first, then the integrity check, the report, the progress
file, the exit status and the terminal summary.

May touch: the session's reports (it trims and escapes captured output and failure text, and counts
outcomes), its exit status,
the files it was asked to write (`--report`, `--sandbox-cli-report`), each challenges folder's
progress file, and the package and challenges trees only through `Snapshot` (put back if changed).
Learner code never runs here: `Implementations` runs it in workers.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from ..boundary._implementations import Implementations
from ..boundary._isolation import Isolation
from ..boundary._text import escaped
from ..boundary._zygotes import close_shared_zygote, forget_shared_zygote
from ._challenge import Challenge, Deadlines
from ._feedback import NOT_STARTED_MARK, NotStarted
from ._integrity import Snapshot, preload
from ._meta import HINTS_FILE, ChallengeRef, load_challenges
from ._report import ResultsFile
from ._state import State, digest
from ._summary import FAILED, NOT_STARTED, PASSED, Tally, challenge_lines

__all__ = ["CAPTURE_LIMIT", "Harness"]
PACKAGE = Path(__file__).resolve().parent.parent.parent
"""The sandbox package: what the integrity check keeps, with the challenges folders."""


class Harness:
    """The challenge machinery for one session: implementations, deadlines, verdicts, summary, report."""

    def __init__(
        self, config: pytest.Config, refs: dict[str, ChallengeRef], isolation: Isolation, deselected: set[str]
    ) -> None:
        self.config = config
        self.refs = refs
        self.deselected = deselected
        """Challenges some of whose tests `-k` or `--deselect` left out: their progress is not saved."""
        self.here = config.invocation_params.dir
        impl = config.getoption("sandbox_impl")
        self.impl_dir = (self.here / impl).resolve() if impl else None
        self.implementations = Implementations(isolation)
        self.deadlines = Deadlines(
            config.getoption("sandbox_timeout"), run_seconds=config.getoption("sandbox_run_deadline")
        )
        self.snapshot: Snapshot | None = None
        self.tampered: list[str] = []
        self.outcomes: dict[str, str] = {}
        self.announce_report = bool(config.getoption("sandbox_report"))
        report = config.getoption("sandbox_report") or config.getoption("sandbox_cli_report")
        self.first_failure = bool(config.getoption("sandbox_first_failure"))
        self.stopped = False
        self.report = (
            ResultsFile(
                self.here / report,
                [(nodeid, ref.name) for nodeid, ref in refs.items()],
                implementation=impl or "exercise.py",
                as_it_goes=self.announce_report,
            )
            if report
            else None
        )

    def _shown(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.here.resolve()).as_posix()
        except ValueError:  # outside the directory pytest runs in: the full path is clearer
            return str(path)

    def source(self, ref: ChallengeRef) -> Path:
        return self.impl_dir / f"{ref.name}.py" if self.impl_dir else ref.folder / "exercise.py"

    def challenge_for(self, nodeid: str) -> Challenge:
        ref = self.refs[nodeid]
        source = self.source(ref)
        return Challenge(ref.name, source, self._shown(source), self.implementations, self.deadlines, test=nodeid)

    def watch(self) -> None:
        """Before any learner code runs: load what the grader judges with, keep what it is."""
        preload()
        rootdir = self.config.rootpath
        self.snapshot = Snapshot.take([PACKAGE, *self._roots()], around=[rootdir, self.here, *self._roots()])

    def become_lane(self, number: int) -> Callable[[], None]:
        """In the grader forked for lane `number` (`_lanes`): grade with a zygote and workers of its own,
        and leave the report, the integrity check and the progress file to the first lane, which reports
        every test. Returns what ends this lane's workers and zygote."""
        forget_shared_zygote(number)
        self.implementations = Implementations(self.implementations.isolation)
        self.implementations.start()
        self.report = None
        self.snapshot = None

        def end() -> None:
            self.implementations.close()
            close_shared_zygote()

        return end

    # -- verdicts -------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if item.nodeid in self.refs:
            report.sections = [(title, escaped(_trimmed(text))) for title, text in report.sections]
            if report.failed:
                text = report.longreprtext
                if escaped(text) != text:
                    report.longrepr = escaped(text)  # the terminal, JUnit, the report and the room read this
            if call.excinfo is not None and call.excinfo.errisinstance(NotStarted):
                vars(report)[NOT_STARTED_MARK] = True  # on the report: it travels with it from another lane
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        """With --sandbox-first-failure, the challenge tests after the first that failed are not run."""
        return True if self.stopped and item.nodeid in self.refs else None

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when == "call" and getattr(report, NOT_STARTED_MARK, False):
            return NOT_STARTED, "N", ("NOT STARTED", {"yellow": True})
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid not in self.refs:
            return
        if report.when == "call":
            outcome = NOT_STARTED if getattr(report, NOT_STARTED_MARK, False) else PASSED if report.passed else FAILED
        elif report.failed or (report.when == "setup" and report.skipped):
            outcome = FAILED
        else:
            return
        self.outcomes[report.nodeid] = outcome
        self.stopped = self.stopped or (self.first_failure and outcome != PASSED)
        if self.report is not None:
            self.report.record(report.nodeid, outcome, "" if outcome == PASSED else report.longreprtext)

    # -- the end of the run ---------------------------------------------------------------------

    def _tallies(self) -> dict[str, Tally]:
        tallies: dict[str, Tally] = {}
        for nodeid, ref in self.refs.items():
            tally = tallies.setdefault(ref.name, Tally())
            tally.collected += 1
            if nodeid in self.outcomes:
                tally.add(self.outcomes[nodeid], nodeid)
        return {name: tally for name, tally in sorted(tallies.items()) if tally.total}

    def _roots(self) -> set[Path]:
        return {ref.folder.parent for ref in self.refs.values() if (ref.folder.parent / HINTS_FILE).is_file()}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Every worker and whatever it started is dead before the last word is written: nothing the
        # learner's code left behind can rewrite the report afterwards.
        self.implementations.close()
        if self.snapshot is not None:
            written = (
                {self.report.path, self.report.path.with_name(self.report.path.name + ".tmp")} if self.report else set()
            )
            self.tampered = self.snapshot.check(ignore=written)
        if self.report is not None:
            if self.tampered:
                self.report.void(self.tampered)
            self.report.write()
        if self.impl_dir is None:
            self._save_progress()
        if session.exitstatus == pytest.ExitCode.OK and (
            self.tampered
            or any(
                tally.failed or tally.not_started or tally.total < tally.collected for tally in self._tallies().values()
            )
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _save_progress(self) -> None:
        """Record each challenge graded in full, with a digest of its exercise, for `sandbox list`."""
        deselected = self.deselected
        tallies = self._tallies()
        for root in self._roots():
            state = State(root)
            graded = [
                (name, tally)
                for name, tally in tallies.items()
                if name not in deselected and tally.total == tally.collected and (root / name).is_dir()
            ]
            for name, tally in graded:
                state.results[name] = {
                    "status": tally.status,
                    "passed": tally.passed,
                    "failed": tally.failed,
                    "not_started": tally.not_started,
                    "first_failure": tally.first_failure,
                    "digest": digest(root / name / "exercise.py"),
                }
            if graded:
                state.save()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tallies = self._tallies()
        if not tallies:
            return
        titles = {info.name: info.title for root in self._roots() for info in load_challenges(root)}
        terminalreporter.write_sep("=", "challenges")
        if self.tampered:
            terminalreporter.write_line(
                "The graded code changed what the grader judges with; this run counts for nothing:"
            )
            for problem in self.tampered:
                terminalreporter.write_line(f"  - {problem}", red=True)
        if self.impl_dir is not None:
            terminalreporter.write_line(f"Graded {self._shown(self.impl_dir)}/<challenge>.py, not exercise.py.")
        for line in challenge_lines(tallies, titles):
            terminalreporter.write_line(line)
        if self.impl_dir is None:
            terminalreporter.write_line(self._next_step(tallies))
        if self.report is not None and self.announce_report:
            terminalreporter.write_line(f"Results written to {self._shown(self.report.path)}")

    def _next_step(self, tallies: dict[str, Tally]) -> str:
        for name, tally in tallies.items():
            stuck = f"Stuck? `sandbox hint {_number(name)}`."
            if tally.status == "not started":
                folder = next(ref.folder for ref in self.refs.values() if ref.name == name)
                return f"Next: {name}. Read {self._shown(folder / 'README.md')}, then edit exercise.py. {stuck}"
            if tally.status == "failing":
                return f"Next: make {name} pass; its first failure is {tally.first_failure}. {stuck}"
            if tally.status == "in progress":
                return f"Next: finish {name}: some of its functions still raise NotImplementedError. {stuck}"
            if tally.status == "incomplete":
                return f"The run stopped before every test of {name} ran: run it again to see them all."
        if len(tallies) == 1:
            name = next(iter(tallies))
            return f"{name} passes. Compare with the reference: `sandbox solution {_number(name)}`."
        return "Every challenge graded here passes. Compare with the references: `sandbox solution N`."


CAPTURE_LIMIT = 4000
"""Characters of a learner's printed output shown per section: a stray print in a loop must not bury
the verdict under megabytes."""


def _trimmed(text: str) -> str:
    if len(text) <= CAPTURE_LIMIT:
        return text
    half = CAPTURE_LIMIT // 2
    cut = len(text) - 2 * half
    return (
        f"{text[:half]}\n[... {cut} characters of output cut: print less, or print only on failure ...]\n{text[-half:]}"
    )


def _number(name: str) -> str:
    """`02_bounded_loop` -> `2`, the short form the CLI takes."""
    return str(int(name[:2])) if name[:2].isdigit() else name
