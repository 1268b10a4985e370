"""The pytest plugin behind `pytest challenges/` (entry point `pytest11: sandbox`).

Options, configure, then a plugin object registered only when challenge tests were collected, so
installing the package never changes an unrelated test run. A test is a challenge test when it sits
in `challenges/NN_name/` or is marked `@pytest.mark.challenge("NN_name")`; it grades
`<its folder>/exercise.py`, or `--impl DIR/NN_name.py`.

    --impl DIR             grade DIR/<challenge folder name>.py instead of exercise.py
    --report PATH          Gradescope results.json, rewritten after every test
    --challenge-timeout S  the per-test deadline (the request budget is the main guard)
    --room URL --name NAME post each run's results to a workshop room (`sandbox room`)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import sandbox

from ._exceptions import ScenarioError
from .grading import Challenge
from .grading.boundary._implementations import Implementations
from .grading.boundary._isolation import MODES, Isolation, IsolationError, choose
from .grading.boundary._runner import WorkerError, shared_zygote
from .grading.judge._challenge import Deadlines
from .grading.judge._feedback import NotStarted
from .grading.judge._grouping import FailureGroups
from .grading.judge._integrity import Snapshot, preload
from .grading.judge._meta import HINTS_FILE, challenge_folder, load_challenges
from .grading.judge._report import ResultsFile
from .grading.judge._state import State, digest
from .grading.judge._summary import FAILED, NOT_STARTED, PASSED, Tally, challenge_lines
from .room import _plugin as room

if TYPE_CHECKING:
    from ._mock import SandboxMock

__all__ = ["challenge", "sandbox_mock"]

DEFAULT_TIMEOUT = 5.0
DEFAULT_RUN_DEADLINE = 900.0
_LOADABLE_IN_CHALLENGES = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")


@dataclass(frozen=True)
class _Ref:
    name: str
    folder: Path


_HARNESS = pytest.StashKey["_Harness"]()
_DESELECTED = pytest.StashKey[set[str]]()
_ISOLATION = pytest.StashKey[Isolation]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sandbox", "skyl-sandbox challenges")
    _add_option(
        parser,
        group,
        ("--impl", "--sandbox-impl"),
        dest="sandbox_impl",
        metavar="DIR",
        default=None,
        help="grade DIR/<challenge folder>.py (e.g. DIR/01_apply_tool_results.py) instead of exercise.py.",
    )
    _add_option(
        parser,
        group,
        ("--report", "--sandbox-report"),
        dest="sandbox_report",
        metavar="PATH",
        default=None,
        help="write challenge results to PATH in Gradescope's results.json format, updated after every test.",
    )
    room.add_options(group, lambda group, names, **attrs: _add_option(parser, group, names, **attrs))
    group.addoption(
        "--sandbox-cli-report",
        dest="sandbox_cli_report",
        metavar="PATH",
        default=None,
        help="as --report, for `sandbox check` and `sandbox watch`, which read it themselves: its path is not printed.",
    )
    group.addoption(
        "--sandbox-first-failure",
        dest="sandbox_first_failure",
        action="store_true",
        default=False,
        help="grade up to the first failing challenge test and run no more (what `sandbox watch` shows), without -x's "
        "banner.",
    )
    group.addoption(
        "--challenge-timeout",
        dest="sandbox_timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per-test deadline for challenge code (default {DEFAULT_TIMEOUT:g}).",
    )
    group.addoption(
        "--isolation",
        dest="sandbox_isolation",
        choices=MODES,
        default="auto",
        help="where learner code runs: strict = only under bubblewrap (refuse to grade without it), process = "
        "plain processes, auto (default) = bubblewrap when usable.",
    )
    group.addoption(
        "--run-deadline",
        dest="sandbox_run_deadline",
        type=float,
        default=DEFAULT_RUN_DEADLINE,
        metavar="SECONDS",
        help=f"deadline for the whole run: tests left after it fail at once (default {DEFAULT_RUN_DEADLINE:g}).",
    )
    group.addoption(
        "--grade-as",
        dest="sandbox_grade_as",
        metavar="USER",
        default=None,
        help="when grading as root, the unprivileged user learner code runs as (default: nobody).",
    )


def _add_option(parser: pytest.Parser, group: Any, names: Sequence[str], **attrs: Any) -> None:
    """Skip a short spelling another plugin already took; the `--sandbox-` spelling always works."""
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    taken = {name for g in groups if g is not None for option in g.options for name in option.names()}
    group.addoption(*[name for name in names if name not in taken], **attrs)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """A conftest.py or an ini file inside a challenges folder is none of the challenges': graded code
    of an earlier run may have written it, and it would run inside the grader. Refused before pytest
    loads any (pytest calls this hook for installed plugins only, before conftest files)."""
    for arg in args:
        if arg.startswith("-"):
            continue
        path = Path(arg.split("::", 1)[0])
        if not path.exists():
            continue
        root = path if (path / HINTS_FILE).is_file() else path.parent if (path.parent / HINTS_FILE).is_file() else None
        if root is None:
            continue
        found = sorted(p for name in _LOADABLE_IN_CHALLENGES for p in root.rglob(name))
        if found:
            raise pytest.UsageError(
                f"{found[0]}: a {found[0].name} inside the challenges folder is not part of the challenges, and it "
                "would run inside the grader (graded code of an earlier run may have written it). Delete it, then "
                "grade again."
            )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "challenge(name): grade this test as challenge `name`, whose exercise.py sits beside it."
    )
    config.addinivalue_line(
        "markers",
        "sandbox(scenario=None, budget=50, faults=None): how the `sandbox_mock` fixture mounts the sandbox "
        "for this test.",
    )
    config.stash[_DESELECTED] = set()
    try:
        config.stash[_ISOLATION] = choose(config.getoption("sandbox_isolation"), config.getoption("sandbox_grade_as"))
    except IsolationError as error:
        raise pytest.UsageError(str(error)) from None
    impl = config.getoption("sandbox_impl")
    if impl and not (config.invocation_params.dir / impl).is_dir():
        raise pytest.UsageError(
            f"--impl {impl}: no such directory. It should hold one module per challenge, named after "
            "its folder: 01_apply_tool_results.py, 02_bounded_loop.py, ..."
        )


def _ref(item: pytest.Item) -> _Ref | None:
    marker = item.get_closest_marker("challenge")
    if marker is not None and marker.args:
        return _Ref(str(marker.args[0]), item.path.parent)
    folder = challenge_folder(item.path)
    return _Ref(folder.name, folder) if folder else None


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    for item in items:
        ref = _ref(item)
        if ref is not None:
            item.config.stash[_DESELECTED].add(ref.name)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """The first challenge test file collected starts the worker zygote: its start-up (it imports skyl)
    overlaps the rest of the collection instead of delaying the first test."""
    if file_path.suffix == ".py" and file_path.name.startswith("test_") and challenge_folder(file_path):
        with contextlib.suppress(WorkerError):  # each challenge test fails with it instead
            shared_zygote(parent.config.stash[_ISOLATION])


def pytest_collection_finish(session: pytest.Session) -> None:
    refs = {item.nodeid: ref for item in session.items if (ref := _ref(item)) is not None}
    if refs:
        harness = _Harness(session.config, refs)
        session.config.stash[_HARNESS] = harness
        session.config.pluginmanager.register(harness, "sandbox-challenges")
        groups = FailureGroups({nodeid: ref.name for nodeid, ref in refs.items()})
        session.config.pluginmanager.register(groups, "sandbox-failure-groups")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(harness.implementations.isolation.notice())
        harness.watch()
        reporter = room.reporter_for(session.config, {nodeid: ref.name for nodeid, ref in refs.items()})
        if reporter is not None:
            session.config.pluginmanager.register(reporter, "sandbox-room")
        with contextlib.suppress(WorkerError):  # each challenge test fails with it instead
            harness.implementations.start()
        _freeze_once()


_FROZEN: list[bool] = []


def _freeze_once() -> None:
    """Move what the imports made (pytest, hypothesis, the sandbox: most of the heap) out of the garbage
    collector's sight, once per process. Grading runs full collections more than once: hypothesis's
    first example (`register_random` collects and asks for referrers) and pytest's unraisable-exception
    check at the end each walked all of it, a few tenths of a second of a 20-test run. What is frozen
    is mostly the modules' own objects, alive until the process ends anyway."""
    if not _FROZEN:
        _FROZEN.append(True)
        gc.freeze()  # no collection first: that would be the very walk this saves


@pytest.fixture
def challenge(request: pytest.FixtureRequest) -> Iterator[Challenge]:
    """The challenge this test grades: its implementation, and dialogues with the sandbox."""
    harness = request.config.stash.get(_HARNESS, None)
    if harness is None or request.node.nodeid not in harness.refs:
        pytest.fail(
            "The `challenge` fixture grades challenges: use it in challenges/NN_name/test_*.py, or mark "
            "the test with @pytest.mark.challenge('NN_name').",
            pytrace=False,
        )
    graded = harness.challenge_for(request.node.nodeid)
    yield graded
    graded.close()


@pytest.fixture
def sandbox_mock(request: pytest.FixtureRequest) -> Iterator[SandboxMock]:
    """The sandbox mounted on the providers' real hosts for one test (`sandbox.mock()`).

    The request's model names the scenario, unless `@pytest.mark.sandbox(scenario=...)` pins one.
    Its `.journal` holds every exchange, for assertions on what your code sent.
    """
    marker = request.node.get_closest_marker("sandbox")
    options = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        options.setdefault("scenario", marker.args[0])
    unknown = sorted(set(options) - {"scenario", "budget", "faults"})
    if unknown:
        pytest.fail(
            f"@pytest.mark.sandbox: unknown argument {', '.join(map(repr, unknown))}; it takes scenario=, budget= "
            "and faults=.",
            pytrace=False,
        )
    from ._mock import mock  # respx, loaded only by the tests that mount the sandbox

    try:
        mounted = mock(**options)
    except ScenarioError as error:
        pytest.fail(f"@pytest.mark.sandbox: {error}", pytrace=False)
    with mounted:
        yield mounted


class _Harness:
    """The challenge machinery for one session: implementations, deadlines, verdicts, summary, report."""

    def __init__(self, config: pytest.Config, refs: dict[str, _Ref]) -> None:
        self.config = config
        self.refs = refs
        self.here = config.invocation_params.dir
        impl = config.getoption("sandbox_impl")
        self.impl_dir = (self.here / impl).resolve() if impl else None
        self.implementations = Implementations(config.stash[_ISOLATION])
        self.deadlines = Deadlines(
            config.getoption("sandbox_timeout"), run_seconds=config.getoption("sandbox_run_deadline")
        )
        self.snapshot: Snapshot | None = None
        self.tampered: list[str] = []
        self.not_started: set[str] = set()
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

    def source(self, ref: _Ref) -> Path:
        return self.impl_dir / f"{ref.name}.py" if self.impl_dir else ref.folder / "exercise.py"

    def challenge_for(self, nodeid: str) -> Challenge:
        ref = self.refs[nodeid]
        source = self.source(ref)
        return Challenge(ref.name, source, self._shown(source), self.implementations, self.deadlines, test=nodeid)

    def watch(self) -> None:
        """Before any learner code runs: load what the grader judges with, keep what it is."""
        preload()
        package = Path(sandbox.__file__).resolve().parent
        rootdir = self.config.rootpath
        self.snapshot = Snapshot.take([package, *self._roots()], around=[rootdir, self.here, *self._roots()])

    # -- verdicts -------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if item.nodeid in self.refs:
            report.sections = [(title, _trimmed(text)) for title, text in report.sections]
            if call.excinfo is not None and call.excinfo.errisinstance(NotStarted):
                self.not_started.add(item.nodeid)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        """With --sandbox-first-failure, the challenge tests after the first that failed are not run."""
        return True if self.stopped and item.nodeid in self.refs else None

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when == "call" and report.nodeid in self.not_started:
            return NOT_STARTED, "N", ("NOT STARTED", {"yellow": True})
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid not in self.refs:
            return
        if report.when == "call":
            outcome = NOT_STARTED if report.nodeid in self.not_started else PASSED if report.passed else FAILED
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
        deselected = self.config.stash[_DESELECTED]
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
