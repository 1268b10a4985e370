"""Grading lanes (`sandbox.grading.judge._lanes`): a run of several challenges grades them in several
grader processes, forked once collection is done (the first lane takes the challenges from the first
on, each other lane the one with the most tests left whenever it is free), and reports exactly what one lane
reports, in the same order: the terminal, `--report`, JUnit XML and the exit status.

Each run here is a `pytest` of a throwaway course of three challenges (one passing, one failing with
a known mutant, one not started), with a plugin (`lane_pids`, on `PYTHONPATH`) that writes which
process ran each test's body; with `LANE_DIE` set, it ends a forked lane's process in the middle of
that test, as a crash of the grader would; with `LANE_HOLD` set to a challenge, the first lane's
first test waits until another lane has started that challenge.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.room_server import serving_room

ROOT = Path(__file__).resolve().parents[2]

LANE_PIDS = """
import os
import time
from pathlib import Path

FIRST = os.getpid()  # imported in the first lane, before it forks
HELD = []


def pytest_runtest_call(item):
    if os.environ.get("LANE_DIE") == item.nodeid and os.getpid() != FIRST:
        os._exit(3)
    pids = Path(os.environ["LANE_PIDS"])
    with pids.open("a") as written:
        written.write(f"{item.nodeid} {os.getpid()}\\n")
    held = os.environ.get("LANE_HOLD")
    if held and os.getpid() == FIRST and not HELD:
        HELD.append(item.nodeid)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(
            f"/{held}/" in line and not line.endswith(f" {FIRST}") for line in pids.read_text().splitlines()
        ):
            time.sleep(0.05)
"""

COURSES = {
    "a failing challenge in the second lane": {
        "01_apply_tool_results": "solutions",
        "02_bounded_loop": "shipped",
        "03_several_calls": "mutants/03_first_call_only",
    },
    "a not-started challenge in the second lane": {
        "01_apply_tool_results": "mutants/01_skip_missing",
        "02_bounded_loop": "solutions",
        "03_several_calls": "shipped",
    },
}


def _course(where: Path, exercises: dict[str, str]) -> Path:
    course = where / "challenges"
    course.mkdir()
    shutil.copy(ROOT / "challenges" / "hints.toml", course)
    for name, exercise in exercises.items():
        shutil.copytree(ROOT / "challenges" / name, course / name)
        if exercise == "solutions":
            shutil.copy(ROOT / "solutions" / f"{name}.py", course / name / "exercise.py")
        elif exercise != "shipped":
            shutil.copy(ROOT / "tests" / exercise / f"{name}.py", course / name / "exercise.py")
    (where / "plugins").mkdir()
    (where / "plugins" / "lane_pids.py").write_text(LANE_PIDS)
    return course


def _grade(
    where: Path, lanes: int, *extra: str, die: str = "", hold: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    pids = where / f"pids-{lanes}-{len(extra)}-{bool(die)}-{hold}.txt"
    pids.unlink(missing_ok=True)
    ignored = ("PYTEST_ADDOPTS", "LANE_DIE", "LANE_HOLD", "SANDBOX_ROOM", "SANDBOX_ROOM_NAME")
    env = {key: value for key, value in os.environ.items() if key not in ignored}
    env["SANDBOX_ROOM_CACHE"] = str(where / "rooms.json")
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(where / "plugins"), env.get("PYTHONPATH")])))
    env.update(LANE_PIDS=str(pids), **({"LANE_DIE": die} if die else {}), **({"LANE_HOLD": hold} if hold else {}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "lane_pids", "challenges",
         "--sandbox-lanes", str(lanes), "--report", f"report-{lanes}.json", "--junitxml", f"junit-{lanes}.xml",
         "-o", "junit_family=xunit2", *extra],
        cwd=where, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    return done, pids.read_text().splitlines() if pids.exists() else []


def _same_run(text: str, where: Path) -> str:
    """What a run in the course folder `where` printed, without what differs from run to run (durations,
    the folder, the report's path, and the rules' padding around a path)."""
    text = re.sub(r"=* (.*) in \d+\.\d+s( \(\d+:\d+:\d+\))? =*", r"\1 in Xs", text.replace(str(where), "COURSE"))
    text = re.sub(r"^-+ (generated xml file: .*?) -+$", r"\1", text, flags=re.MULTILINE)
    return re.sub(r"report-\d\.json", "report.json", re.sub(r"junit-\d\.xml", "junit.xml", text))


def _letters(text: str) -> str:
    """The progress letters (`.`, `F`, `N`) of every test, in order."""
    lines = text.split("= FAILURES =")[0].splitlines()
    return "".join(
        re.sub(r"^challenges/\S+ |\s*\[\s*\d+%\]$", "", line)
        for line in lines
        if re.fullmatch(r"(challenges/\S+ )?[.FN]+\s*(\[\s*\d+%\])?", line)
    )


def _report(path: Path) -> object:
    report = json.loads(path.read_text())
    report.pop("execution_time", None)
    return report


def _junit(path: Path) -> str:
    return re.sub(r' (time|timestamp|hostname)="[^"]*"', "", path.read_text()).replace("junit-2", "junit-1")


def _in_order(pids: list[str]) -> dict[str, list[str]]:
    """Challenge folder -> the tests whose bodies ran, in the order they ran."""
    ran: dict[str, list[str]] = {}
    for line in pids:
        nodeid = line.rsplit(" ", 1)[0]
        ran.setdefault(nodeid.split("/")[1], []).append(nodeid)
    return ran


def _processes(pids: list[str]) -> dict[str, set[str]]:
    """Challenge folder -> the processes that ran its tests' bodies."""
    ran: dict[str, set[str]] = {}
    for line in pids:
        nodeid, pid = line.rsplit(" ", 1)
        ran.setdefault(nodeid.split("/")[1], set()).add(pid)
    return ran


@dataclasses.dataclass(frozen=True)
class OneLane:
    """A course graded in one lane: what the lanes' runs of the same course are compared with."""

    where: Path
    done: subprocess.CompletedProcess[str]
    pids: list[str]


@pytest.fixture(scope="module")
def one_lane(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], OneLane]:
    """Each course graded once in one lane, shared by the tests that compare lanes with it."""

    @functools.cache
    def graded(course: str) -> OneLane:
        where = tmp_path_factory.mktemp("one-lane")
        _course(where, COURSES[course])
        return OneLane(where, *_grade(where, 1))

    return graded


def _same_results(one: OneLane, many: subprocess.CompletedProcess[str], where: Path, lanes: int) -> None:
    assert one.done.returncode == many.returncode == 1, one.done.stdout + one.done.stderr + many.stdout + many.stderr
    assert _same_run(many.stdout, where) == _same_run(one.done.stdout, one.where)
    assert many.stderr == one.done.stderr
    assert _report(where / f"report-{lanes}.json") == _report(one.where / "report-1.json")
    assert _junit(where / f"junit-{lanes}.xml") == _junit(one.where / "junit-1.xml")
    assert "failed" in one.done.stdout.splitlines()[-1] and "not started" in one.done.stdout.splitlines()[-1]


@pytest.mark.parametrize("course", list(COURSES))
def test_lanes_report_what_one_lane_reports(tmp_path: Path, course: str, one_lane: Callable[[str], OneLane]) -> None:
    _course(tmp_path, COURSES[course])
    one = one_lane(course)
    assert len(set().union(*_processes(one.pids).values())) == 1
    for lanes in (2, 3):
        many, many_pids = _grade(tmp_path, lanes)
        _same_results(one, many, tmp_path, lanes)
        # The same tests ran, in the same order within each challenge, each challenge in one process; the
        # last one in a forked lane from the start, at the same time as the first (their lines interleave).
        ran = _processes(many_pids)
        assert _in_order(many_pids) == _in_order(one.pids)
        assert all(len(pids) == 1 for pids in ran.values()), ran
        assert ran["03_several_calls"] != ran["01_apply_tool_results"]
        if lanes == 3:  # one challenge each: the two forked lanes each take one as soon as they start
            assert len(set().union(*ran.values())) == 3, ran


@pytest.mark.slow
def test_a_lane_grades_what_it_claims_in_its_own_order_and_it_is_reported_in_test_order(
    tmp_path: Path, one_lane: Callable[[str], OneLane]
) -> None:
    """The first lane is held in its first test until the forked lane, done with the last challenge (02 and
    03 have as many tests: the last of them first), has taken the middle one: that lane graded 03 then 02,
    and the run still reports 01, 02, 03."""
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    one = one_lane("a failing challenge in the second lane")
    held, pids = _grade(tmp_path, 2, hold="02_bounded_loop")

    _same_results(one, held, tmp_path, 2)
    ran = _processes(pids)
    assert ran["02_bounded_loop"] == ran["03_several_calls"] != ran["01_apply_tool_results"], ran
    forked = min(ran["02_bounded_loop"])
    theirs = [line.rsplit(" ", 1)[0].split("/")[1] for line in pids if line.endswith(f" {forked}")]
    assert (
        theirs == sorted(theirs, reverse=True) and theirs[0] == "03_several_calls" and theirs[-1] == "02_bounded_loop"
    )


@pytest.mark.slow
def test_a_run_that_stops_at_its_first_failure_keeps_one_lane(tmp_path: Path) -> None:
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    done, pids = _grade(tmp_path, 2, "-x")

    assert done.returncode == 1, done.stdout + done.stderr
    assert len(set(_processes(pids).get("02_bounded_loop", set()) | _processes(pids)["01_apply_tool_results"])) == 1
    assert "03_several_calls" not in _processes(pids), "-x stopped at 02's first test, before 03 ran anywhere"
    assert "stopping after 1 failures" in done.stdout


@pytest.mark.slow
def test_tests_the_second_lane_did_not_report_run_in_the_first(
    tmp_path: Path, one_lane: Callable[[str], OneLane]
) -> None:
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    one = one_lane("a failing challenge in the second lane")
    test = next(line.rsplit(" ", 1)[0] for line in one.pids if "03_several_calls" in line)
    cut = [line.rsplit(" ", 1)[0] for line in one.pids].index(test) + 3
    died, pids = _grade(tmp_path, 2, die=[line.rsplit(" ", 1)[0] for line in one.pids][cut])

    assert died.returncode == one.done.returncode == 1
    assert "sandbox: a grading lane ended early; its tests ran in the first lane instead." in died.stdout
    # The notice breaks the line of progress letters; the letters, the failures and the summary are the same.
    assert _letters(died.stdout) == _letters(one.done.stdout) and len(_letters(one.done.stdout)) == 72
    failures = _same_run(died.stdout, tmp_path).split("= FAILURES =")[1]
    assert failures == _same_run(one.done.stdout, one.where).split("= FAILURES =")[1]
    assert _report(tmp_path / "report-2.json") == _report(one.where / "report-1.json")
    # The tests of 03 before the crash ran in the second lane; the one it died in and the rest, here.
    ran = [line.rsplit(" ", 1) for line in pids]
    first = {pid for nodeid, pid in ran if "01_apply_tool_results" in nodeid}
    assert [pid in first for nodeid, pid in ran if "03_several_calls" in nodeid] == [False] * 3 + [True] * 17


@pytest.mark.slow
def test_a_room_hears_from_two_lanes_what_it_hears_from_one(tmp_path: Path) -> None:
    """The room's reporter learns each failure's rule and feedback where the test ran; from the second
    lane they travel on the reports."""
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    with serving_room(tmp_path / "room.db") as served:
        one, _ = _grade(tmp_path, 1, "--room", served.room, "--name", "Ada")
        two, pids = _grade(tmp_path, 2, "--room", served.room, "--name", "Bo")
        assert one.returncode == two.returncode == 1, one.stdout[-1500:] + two.stdout[-1500:]
        assert len(_processes(pids)["03_several_calls"] | _processes(pids)["01_apply_tool_results"]) == 2
        rows = {
            row["name"]: {name: {**cell, "at": None, "since": None} for name, cell in row["cells"].items()}  # when
            for row in served.instructor("/api/state").json()["learners"]
        }
        assert rows["Bo"] == rows["Ada"]
        assert rows["Bo"]["03_several_calls"]["status"] == "failing" and rows["Bo"]["03_several_calls"]["rules"]
        assert rows["Bo"]["02_bounded_loop"]["status"] == "not started"
        failures = [
            {**served.instructor(f"/api/learners/{name}").json()["latest_failure"], "at": None}
            for name in ("Ada", "Bo")
        ]
        assert failures[0] == failures[1] and "several_calls" in failures[1]["challenge"]
