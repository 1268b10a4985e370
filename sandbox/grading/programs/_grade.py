"""`sandbox grade`: grade a program in any language, case by case, with the challenges' verdicts.

Each case (challenge x scenario x wire format) runs the program once against a fresh private sandbox
(`ProgramDialogue`, a door of its own on the grader's loopback `Endpoint`), and its verdict is the
one `pytest challenges/` gives Python code: the same transcripts, provider errors, rules and hints,
the same tallies and summary, and the same Gradescope `results.json`, written before the first case
and after every case. The exit status comes from the tallies: 0 only when every case passed.

The feedback names the learner's API in the program's language (`speaking`). A program that exits
without a word to the model on every case of some wire formats, while it talks on others, does not
speak those: the first screen says which, and the `--wire` command that grades the rest.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import pytest

from ...engine._catalogue import get_scenario
from ...engine._scenario import Scenario
from ..boundary._endpoint import Endpoint
from ..boundary._isolation import Isolation
from ..boundary._program import ProgramRun, Relay, program_refusal, run_program
from ..boundary._text import escaped
from ..judge._grouping import group_failures, same_mistake_lines
from ..judge._language import speaking
from ..judge._report import ResultsFile
from ..judge._summary import FAILED, PASSED, Tally, challenge_lines
from ._access import unreachable
from ._program_cases import CASES, Case
from ._program_dialogue import ProgramDialogue

__all__ = ["Planned", "grade", "plan"]

BUILD_SECONDS = 300.0
"""The build step's limit: a first `go build` compiles the standard library it uses."""
AFTER_HANG = 2.0
"""Seconds per case for the rest of a challenge once one of its cases hung."""
OVERLAP_WAIT = 2.0
"""How long a tool run waits for its turn's other calls (challenge 08). They are HTTP requests from
another process, started by a runtime we do not know, on a machine that may be busy: a generous
wait costs nothing when they do overlap, and only one case when they do not."""
AFTER_SEQUENTIAL = 0.05


@dataclass
class Session:
    """What every case of one `sandbox grade` run shares: the program, the limits, the endpoint, and
    what it said on each wire format."""

    command: Sequence[str]
    limits: Limits
    endpoint: Endpoint
    cwd: str | None = None
    isolation: Isolation = field(default_factory=lambda: Isolation(False))
    relay: Relay | None = None
    spoken: dict[str, Spoken] = field(default_factory=dict)
    access: str = ""
    """Why the user programs run as cannot reach the program's files, when it cannot (`unreachable`)."""


@dataclass
class Spoken:
    """Whether a program talked to the model on one wire format: its runs, and those that exited
    without a single model request (with the first thing such a run said on stderr)."""

    runs: int = 0
    silent: int = 0
    said: str = ""

    def record(self, requests: int, exited: bool, stderr: str) -> None:
        self.runs += 1
        if requests == 0 and exited:
            self.silent += 1
            self.said = self.said or escaped(next((line.strip() for line in stderr.splitlines() if line.strip()), ""))


class Limits:
    """The per-case deadline and overlap wait, shortened for the rest of a challenge once one of its
    cases hung, or ran a turn's calls one at a time: one mistake should not stall a whole run."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._hung: set[str] = set()
        self._sequential: set[str] = set()

    def deadline(self, challenge: str) -> float:
        return min(self.seconds, AFTER_HANG) if challenge in self._hung else self.seconds

    def overlap_wait(self, challenge: str) -> float:
        return AFTER_SEQUENTIAL if challenge in self._sequential else OVERLAP_WAIT

    def record_hang(self, challenge: str) -> None:
        self._hung.add(challenge)

    def record_sequential(self, challenge: str) -> None:
        self._sequential.add(challenge)


@dataclass(frozen=True)
class Planned:
    """One case on one wire format."""

    challenge: str
    case: Case
    provider: str

    @property
    def nodeid(self) -> str:
        return f"{self.challenge}::{self.case.test}[{self.case.scenario}-{self.provider}]"


def plan(challenges: Sequence[str], providers: Sequence[str]) -> list[Planned]:
    return [
        Planned(challenge, case, provider)
        for challenge in challenges
        for case in CASES[challenge]
        for provider in providers
    ]


def grade(
    command: Sequence[str],
    planned: Sequence[Planned],
    *,
    out: TextIO,
    timeout: float,
    report: Path | None = None,
    build: str | None = None,
    cwd: str | None = None,
    titles: Mapping[str, str] | None = None,
    language: str = "other",
    observe: Callable[[Sequence[Planned], Mapping[str, tuple[str, str]]], None] | None = None,
    isolation: Isolation | None = None,
    show_isolation: bool = True,
    built: Callable[[], None] | None = None,
) -> int:
    """Run every planned case; print the failures and the summary; return the exit status. `build`
    is a shell line, run once in `cwd` first; `language` picks the names the feedback uses.

    `observe` sees every verdict once all are final (the workshop room's hook: it posts them).
    `show_isolation`: start with the line that says where the program runs (the CLI shows it with -v,
    or when it is not the default, bubblewrap). `built` is called once the build is done (`sandbox watch`
    looks for saves from then on)."""
    isolation = isolation or Isolation(False)

    def echo(text: str = "", end: str = "\n") -> None:
        out.write(text + end)
        out.flush()

    shown = shlex.join(command)
    # Hypothesis caches under .hypothesis/ in the current folder, the learner's: the grader's go to its own.
    from hypothesis.configuration import set_hypothesis_home_dir

    hypothesis_home = tempfile.TemporaryDirectory(prefix="sandbox-grade-")
    set_hypothesis_home_dir(str(_hypothesis_cache() or hypothesis_home.name))
    results = ResultsFile(report, [(item.nodeid, item.challenge) for item in planned], shown) if report else None
    if build:
        where = "in the program's sandbox" if isolation.sandboxed else "outside any sandbox, with the grader's rights"
        echo(f"Building ({where}, in {cwd or os.getcwd()}): {build}")
    broken = (_build(build, cwd, command, isolation) if build else None) or program_refusal(command, cwd) or None
    if built is not None:
        built()
    outcomes: dict[str, tuple[str, str]] = {}
    if show_isolation:
        echo(isolation.notice())
    echo(f"Grading `{shown}`: {len(planned)} case(s).")
    sockets = tempfile.TemporaryDirectory(prefix="sandbox-grade-")
    folder = Path(sockets.name)
    folder.chmod(0o755)  # for the unprivileged user the program runs as, when the grader is root
    endpoint = Endpoint(unix=(folder / "endpoint.sock", "endpoint.sock") if isolation.sandboxed else None)
    relay = Relay(endpoint.port, folder, "endpoint.sock") if isolation.sandboxed else None
    session = Session(command, Limits(timeout), endpoint, cwd, isolation, relay)
    if isolation.uid is not None and isolation.gid is not None:
        session.access = unreachable(
            command, cwd, isolation.uid, isolation.gid, isolation.user, sandboxed=isolation.sandboxed
        )
    try:
        current = ""
        for item in planned:
            if item.challenge != current:
                current = item.challenge
                echo(f"\n{current} ", end="")
            with speaking(language):
                outcome, output = (FAILED, broken) if broken else _grade_case(session, item)
            outcomes[item.nodeid] = (outcome, output)
            echo("." if outcome == PASSED else "F", end="")
            if results is not None:
                results.record(item.nodeid, outcome, output)
    finally:
        session.endpoint.close()
        sockets.cleanup()
        set_hypothesis_home_dir(None)
        hypothesis_home.cleanup()
    echo("")
    if observe is not None:
        observe(planned, outcomes)
    advice = _unspoken(session, planned)
    if advice:
        echo("\n" + advice)
    _print_failures(planned, outcomes, out)
    tallies: dict[str, Tally] = {}
    for item in planned:
        tally = tallies.setdefault(item.challenge, Tally())
        tally.collected += 1
        tally.add(outcomes[item.nodeid][0], item.nodeid)
    echo("")
    for line in challenge_lines(tallies, titles or {}):
        echo(line)
    if report is not None:
        echo(f"Results written to {report}")
    if advice:
        echo(advice.splitlines()[-1])
    return 0 if all(outcome == PASSED for outcome, _ in outcomes.values()) else 1


def _grade_case(session: Session, item: Planned) -> tuple[str, str]:
    """The case's verdict: on its scenario, or on every scenario its strategy draws."""
    try:
        if item.case.generated:
            _judge_generated(session, item)
        else:
            _judge(session, item, get_scenario(item.case.scenario))
    except pytest.fail.Exception as failure:
        return FAILED, escaped(str(failure.msg))
    return PASSED, ""


def _hypothesis_cache() -> Path | None:
    """The grader's own hypothesis folder, `~/.cache/skyl-sandbox/hypothesis` (or under
    $XDG_CACHE_HOME): private to the user grading (0700, theirs), so no one else can feed it. None when
    it cannot be made so: then each run starts from an empty one."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "skyl-sandbox" / "hypothesis"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except (OSError, RuntimeError):  # RuntimeError: no home to expand
        return None
    uid = os.getuid() if hasattr(os, "getuid") else info.st_uid  # Windows: no owner ids to compare
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        return None
    return folder


def _judge_generated(session: Session, item: Planned) -> None:
    """As the Python tests grade a property: reproducible examples, no shrinking (see `_generated`).
    Hypothesis's own report of the failing example is left out: the transcript shows the scenario."""
    from hypothesis import given, reporting, settings
    from hypothesis.errors import Flaky

    # Through sys.modules, as `sandbox.grading.__getattr__` does: a package attribute could be a copy
    # built on a hypothesis that an in-process pytest run has since dropped.
    _generated = importlib.import_module("..judge._generated", __package__)
    grading: settings = _generated.GRADING
    options = dict(item.case.options)
    reasoned = options.pop("reasoning", False)
    strategy = getattr(_generated, item.case.generated)(**options)
    if reasoned:
        strategy = strategy.map(lambda task: task.with_reasoning(task.name))

    @grading
    @given(scenario=strategy)
    def check(scenario: Scenario) -> None:
        _judge(session, item, scenario)

    try:
        with reporting.with_reporter(lambda _: None):
            check()
    except Flaky as flaky:
        # An example failed, then passed when replayed (a program's timing varies): the failure stands.
        first = next((error for error in _leaves(flaky) if isinstance(error, pytest.fail.Exception)), None)
        if first is None:
            raise
        raise first from None


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside a group, each unwrapped (hypothesis wraps a BaseException, as pytest's
    failures are, in one of its own)."""
    inner = getattr(error, "exceptions", None)
    if inner:
        return [leaf for child in inner for leaf in _leaves(child)]
    return [error.__cause__] if error.__cause__ is not None else [error]


def _judge(session: Session, item: Planned, scenario: Scenario) -> None:
    """Run the program once on `scenario`; return if it passed, fail (pytest.fail) with the feedback."""
    case = item.case
    limits = session.limits
    talk = ProgramDialogue(
        scenario,
        item.provider,
        stream=case.stream,
        failing=case.failing,
        unknown_tools=case.unknown_tools,
        concurrency_wait=limits.overlap_wait(item.challenge) if case.concurrent else None,
        refuse=case.refuse,
        refuse_status=case.refuse_status,
        reasoning=case.reasoning,
        faults=case.faults,
    )
    talk.access = session.access
    run = talk.run(
        session.command,
        limits.deadline(item.challenge),
        session.endpoint,
        cwd=session.cwd,
        isolation=session.isolation,
        relay=session.relay,
    )
    session.spoken.setdefault(item.provider, Spoken()).record(
        talk.requests, run.returncode is not None and not run.timed_out, run.stderr
    )
    if run.timed_out:
        limits.record_hang(item.challenge)
    if case.expect == "answer":
        talk.expect_answer(run, bound=5)
    elif case.expect == "refused":
        talk.expect_provider_error_reported(run)
    elif case.expect == "refused_once":
        talk.expect_provider_error_reported(run, lesson=talk.retry_lesson)
    elif case.expect == "retried":
        talk.expect_retried_answer(run, bound=5)
    elif case.expect == "exhausted":
        talk.expect_retries_exhausted(run)
    else:
        report = talk.expect_gave_up(run, bound=5)
        if case.expect == "report":
            talk.expect_runaway_report(report)
    if case.stream:
        talk.expect_streamed()
    if case.concurrent:
        if talk.probe is not None and talk.probe.one_at_a_time is not None:
            limits.record_sequential(item.challenge)
        talk.expect_concurrent()


def _build(build: str, cwd: str | None, command: Sequence[str], isolation: Isolation) -> str | None:
    """Run the build line once, with the shell (`cd loop && go build -o ../loop-bin .`: Go 1.19 has no
    `go build -C`); its failure, as every case's feedback, or None.

    Under bubblewrap it runs in the program's sandbox, as the program's user, with the folders the
    program's command names writable and a fresh `/tmp` for its home and caches; elsewhere, as the
    grader, in the grader's own environment (the README says to build only what one would run oneself,
    or in a container of its own)."""
    shell = ["cmd", "/c", build] if os.name == "nt" else ["/bin/sh", "-c", build]
    inside = isolation if isolation.sandboxed else None
    run: ProgramRun = run_program(shell, dict(os.environ), BUILD_SECONDS, cwd=cwd, isolation=inside, building=command)
    if run.returncode == 0 and not run.timed_out:
        return None
    why = run.not_started or ("it did not finish" if run.timed_out else run.exit_description)
    output = escaped(run.stderr + run.stdout).rstrip() or "(no output)"
    said = f"The program did not build ({why}), so no case could run. `{build}` said:\n{output}"
    if isolation.sandboxed and isolation.user and "ermission denied" in output:
        said += (
            f"\nThe build runs as user {isolation.user}: let it write the program's folder "
            f"(`chown -R {isolation.user}` it), or grade with --grade-as USER."
        )
    return said


def _unspoken(session: Session, planned: Sequence[Planned]) -> str:
    """What to do when the program did not speak some of the wire formats it was graded on: it exited
    without asking the model anything on every one of their cases, and talked to it on others."""
    quiet = [name for name, spoken in session.spoken.items() if spoken.runs and spoken.silent == spoken.runs]
    talked = [name for name, spoken in session.spoken.items() if spoken.silent < spoken.runs]
    if not quiet or not talked:
        return ""
    said = session.spoken[quiet[0]].said
    challenges = sorted({item.challenge for item in planned})
    number = f" {challenges[0][:2].lstrip('0')}" if len(challenges) == 1 else ""
    return (
        f"Your program did not speak {', '.join(quiet)}: on every case of those it exited without asking the "
        "model anything" + (f' (it said: "{said}").' if said else ".") + "\n"
        f"To grade only the formats it speaks: sandbox grade{number} --wire {','.join(talked)} -- "
        f"{shlex.join(session.command)}"
    )


def _print_failures(planned: Sequence[Planned], outcomes: Mapping[str, tuple[str, str]], out: TextIO) -> None:
    """The first failure of each mistake in full, then the other cases of that mistake, as the pytest
    run groups them (the report holds them all in full), within the terminal's width."""
    width = min(shutil.get_terminal_size().columns, 100)
    failed = [(item.challenge, item.nodeid, outcomes[item.nodeid][1]) for item in planned]
    for nodeid, output, others in group_failures(failure for failure in failed if outcomes[failure[1]][0] != PASSED):
        name = nodeid.replace("::", ": ", 1)
        out.write(f"\n{'=' * 8} FAILED {name} {'=' * max(0, 80 - len(name))}\n{output}\n")
        if others:
            out.write("\n" + "\n".join(same_mistake_lines(others, width)) + "\n")
