"""The pytest plugin behind `pytest challenges/` (entry point `pytest11: sandbox`).

Options, configure, then a `Harness` registered only when challenge tests were collected, so
installing the package never changes an unrelated test run. A test is a challenge test when it sits
in `challenges/NN_name/` or is marked `@pytest.mark.challenge("NN_name")`; it grades
`<its folder>/exercise.py`, or `--impl DIR/NN_name.py`. The options are `grading.judge._options`'s
(`--impl`, `--report`, `--challenge-timeout`, `--isolation`, `--room`...), the session's machinery
(verdicts, integrity, report, summary) `grading.judge._harness`'s.

May touch: pytest's configuration (markers, its stash), the collection (it refuses conftest and ini
files inside a challenges folder, starts the worker template process and spares for the other
parallel graders, registers the harness, the failure groups, the room's reporter and the parallel
graders) and the garbage collector (`gc.freeze`, once). Its fixtures hand a test its `Challenge`,
or a mounted `sandbox.mock()`.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._exceptions import ScenarioError, UsageError
from .adapters import _guard as guard
from .grading.boundary._isolation import Isolation, IsolationError, choose
from .grading.judge._meta import HINTS_FILE, ROOT_NAME, ChallengeRef, challenge_folder, find_root
from .grading.judge._options import add_options

if TYPE_CHECKING:
    from .adapters._mock import SandboxMock
    from .adapters._serving import RunningSandbox
    from .grading import Challenge
    from .grading.judge._harness import Harness

__all__ = ["challenge", "sandbox_mock", "sandbox_server"]

_LOADABLE_IN_CHALLENGES = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")

_HARNESS = pytest.StashKey["Harness"]()
_DESELECTED = pytest.StashKey[set[str]]()
_ISOLATION = pytest.StashKey[Isolation]()
_FOLDERS = pytest.StashKey[set[Path]]()
_GUARDED = pytest.StashKey[bool]()

_ENV_ALLOWS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    parser.addini(
        guard.ALLOW_INI,
        type="bool",
        default=False,
        help=f"let tests reach the real provider hosts with no sandbox mounted (or {guard.ALLOW_ENV}=1); "
        "by default such a request fails before anything is sent.",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """A conftest.py or an ini file inside a challenges folder is none of the challenges': graded code
    of an earlier run may have written it, and it would run inside the grader. Refused before pytest
    loads any (pytest calls this hook for installed plugins only, before conftest files).

    A run that grades challenges also gets the options' short spellings (`--impl`, `--report`...):
    one whose paths (or folder, when it names none) lie in or above a `challenges/` folder. Every other
    run knows only the `--sandbox-` spellings, so a project's own plugins and conftests keep theirs."""
    if _grades_challenges(args, early_config.invocation_params.dir):
        add_options(parser, short=True)
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


def _grades_challenges(args: Sequence[str], here: Path) -> bool:
    paths = [arg.split("::", 1)[0] for arg in args if not arg.startswith("-")]
    return any(
        ROOT_NAME in (here / path).resolve().parts or find_root(here / path) is not None for path in paths or ["."]
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "challenge(name): grade this test as challenge `name`, whose exercise.py sits beside it."
    )
    config.addinivalue_line(
        "markers",
        "sandbox(scenario=None, budget=50, faults=None, strict=True): how the `sandbox_mock` fixture mounts "
        "the sandbox for this test (and the `sandbox_server` fixture serves it, strict aside); strict fails "
        "it at teardown on unplayed steps and unmatched requests.",
    )
    config.stash[_DESELECTED] = set()
    config.stash[_FOLDERS] = set()
    allowed = _ENV_ALLOWS.get(os.environ.get(guard.ALLOW_ENV, "").strip().lower())
    if allowed is None:
        raise pytest.UsageError(
            f"{guard.ALLOW_ENV}={os.environ[guard.ALLOW_ENV]!r}: use 1 to let tests reach the real provider hosts, "
            "or 0 (the default) to stop them."
        )
    config.stash[_GUARDED] = not (allowed or config.getini(guard.ALLOW_INI))
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Each test, fixtures included, runs with the real-API guard on httpx and httpx2 (those imported by
    then), unless the engineer opted out."""
    if item.config.stash.get(_GUARDED, False):
        guard.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    guard.uninstall()


def _ref(item: pytest.Item) -> ChallengeRef | None:
    marker = item.get_closest_marker("challenge")
    if marker is not None and marker.args:
        return ChallengeRef(str(marker.args[0]), item.path.parent)
    folder = challenge_folder(item.path)
    return ChallengeRef(folder.name, folder) if folder else None


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    for item in items:
        ref = _ref(item)
        if ref is not None:
            item.config.stash[_DESELECTED].add(ref.name)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """The first challenge test file collected starts the worker template process: its start-up (it
    imports skyl) overlaps the rest of the collection instead of delaying the first test. The second
    challenge's, and each next one's up to the run's number of parallel graders, starts a spare for
    another grader (`judge._lanes`)."""
    folder = challenge_folder(file_path) if file_path.suffix == ".py" and file_path.name.startswith("test_") else None
    if folder:
        from .grading.boundary._runner import WorkerError
        from .grading.boundary._zygotes import shared_zygote, spare_zygote
        from .grading.judge._lanes import lane_limit

        config = parent.config
        folders = config.stash[_FOLDERS]
        folders.add(folder)
        with contextlib.suppress(WorkerError):  # each challenge test fails with it instead
            shared_zygote(config.stash[_ISOLATION])
            if 2 <= len(folders) <= lane_limit(config):
                spare_zygote(config.stash[_ISOLATION])


def pytest_collection_finish(session: pytest.Session) -> None:
    refs = {item.nodeid: ref for item in session.items if (ref := _ref(item)) is not None}
    if not refs and not session.config.stash[_FOLDERS]:
        return  # nothing to grade, and no worker started: the grading machinery stays unloaded
    from .grading.boundary._runner import WorkerError
    from .grading.boundary._zygotes import reap_spare_zygotes
    from .grading.judge import _room_reporter as room
    from .grading.judge._grouping import FailureGroups
    from .grading.judge._harness import Harness
    from .grading.judge._lanes import Lanes, lane_limit, units

    if not refs:
        reap_spare_zygotes()
    else:
        harness = Harness(session.config, refs, session.config.stash[_ISOLATION], session.config.stash[_DESELECTED])
        session.config.stash[_HARNESS] = harness
        session.config.pluginmanager.register(harness, "sandbox-challenges")
        groups = FailureGroups({nodeid: ref.name for nodeid, ref in refs.items()})
        session.config.pluginmanager.register(groups, "sandbox-failure-groups")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        isolation = harness.implementations.isolation
        default = session.config.getoption("sandbox_isolation") == "auto" and isolation.sandboxed
        default = default and not isolation.unfiltered
        if reporter is not None and (session.config.option.verbose > 0 or not default):
            reporter.write_line(isolation.notice())  # where learner code runs: said when it is not the default
        harness.watch()
        reporter = room.reporter_for(session.config, {nodeid: ref.name for nodeid, ref in refs.items()})
        if reporter is not None:
            session.config.pluginmanager.register(reporter, "sandbox-room")
        with contextlib.suppress(WorkerError):  # each challenge test fails with it instead
            harness.implementations.start()
        graded = units(session.config, session.items, lambda item: _source(harness, refs, item))
        if graded:
            lanes = Lanes(graded, lane_limit(session.config) - 1, harness.become_lane)
            session.config.pluginmanager.register(lanes, "sandbox-lanes")
        else:
            reap_spare_zygotes()
        _freeze_once()


def _source(harness: Harness, refs: dict[str, ChallengeRef], item: pytest.Item) -> Path | None:
    return harness.source(refs[item.nodeid]) if item.nodeid in refs else None


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
    Its `.journal` holds every exchange, for assertions on what your code sent. Strict unless the
    marker says `strict=False`: the test fails at teardown, naming them, when scripted steps were
    left unplayed or a request matched no step.
    """
    marker = request.node.get_closest_marker("sandbox")
    options = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        options.setdefault("scenario", marker.args[0])
    options.setdefault("strict", True)
    unknown = sorted(set(options) - {"scenario", "budget", "faults", "echo", "strict"})
    if unknown:
        pytest.fail(
            f"@pytest.mark.sandbox: unknown argument {', '.join(map(repr, unknown))}; it takes scenario=, budget=, "
            "faults=, echo= and strict=.",
            pytrace=False,
        )
    from .adapters._mock import mock  # respx, loaded only by the tests that mount the sandbox

    strict = options.pop("strict")
    if not isinstance(strict, bool):
        pytest.fail(f"@pytest.mark.sandbox: strict={strict!r}; use True or False.", pytrace=False)
    try:
        mounted = mock(**options)
    except (ScenarioError, UsageError) as error:
        pytest.fail(f"@pytest.mark.sandbox: {error}", pytrace=False)
    with mounted:
        yield mounted
    if strict:
        try:
            mounted.check()
        except AssertionError as error:
            pytest.fail(str(error), pytrace=False)


@pytest.fixture
def sandbox_server(request: pytest.FixtureRequest) -> Iterator[RunningSandbox]:
    """`sandbox serve` on a free port of 127.0.0.1 for one test (`sandbox.serving()`), in a thread.

    `.url` (and `.openai_url`) for any client, even a program in another language; `.journal()` for
    what the sandbox answered. `@pytest.mark.sandbox(scenario=..., budget=..., faults=...)` applies.
    """
    marker = request.node.get_closest_marker("sandbox")
    options = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        options.setdefault("scenario", marker.args[0])
    options.pop("strict", None)
    unknown = sorted(set(options) - {"scenario", "budget", "faults"})
    if unknown:
        pytest.fail(
            f"@pytest.mark.sandbox: the sandbox_server fixture takes scenario=, budget= and faults=, not "
            f"{', '.join(map(repr, unknown))}.",
            pytrace=False,
        )
    from .adapters._serving import serving  # uvicorn's server, loaded only by the tests that serve

    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(serving(**options))
        except (ScenarioError, UsageError) as error:
            pytest.fail(f"@pytest.mark.sandbox: {error}", pytrace=False)
        yield server
