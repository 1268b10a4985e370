"""Two grading lanes (`sandbox.grading.judge._lanes`): a run of several challenges grades its last ones
in a second grader process, forked once collection is done, and reports exactly what one lane
reports, in the same order: the terminal, `--report`, JUnit XML and the exit status.

Each run here is a `pytest` of a throwaway course of three challenges (one passing, one failing with
a known mutant, one not started), with a plugin (`lane_pids`, on `PYTHONPATH`) that writes which
process ran each test's body; with `LANE_DIE` set, it ends the second lane's process in the middle
of that test, as a crash of the grader would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.room_server import serving_room

ROOT = Path(__file__).resolve().parent.parent

LANE_PIDS = """
import os
from pathlib import Path

FIRST = os.getpid()  # imported in the first lane, before it forks


def pytest_runtest_call(item):
    if os.environ.get("LANE_DIE") == item.nodeid and os.getpid() != FIRST:
        os._exit(3)
    with Path(os.environ["LANE_PIDS"]).open("a") as pids:
        pids.write(f"{item.nodeid} {os.getpid()}\\n")
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


def _grade(where: Path, lanes: int, *extra: str, die: str = "") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    pids = where / f"pids-{lanes}-{len(extra)}-{bool(die)}.txt"
    pids.unlink(missing_ok=True)
    ignored = ("PYTEST_ADDOPTS", "LANE_DIE", "SANDBOX_ROOM", "SANDBOX_ROOM_NAME")
    env = {key: value for key, value in os.environ.items() if key not in ignored}
    env["SANDBOX_ROOM_CACHE"] = str(where / "rooms.json")
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(where / "plugins"), env.get("PYTHONPATH")])))
    env.update(LANE_PIDS=str(pids), **({"LANE_DIE": die} if die else {}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "lane_pids", "challenges",
         "--sandbox-lanes", str(lanes), "--report", f"report-{lanes}.json", "--junitxml", f"junit-{lanes}.xml",
         "-o", "junit_family=xunit2", *extra],
        cwd=where, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    return done, pids.read_text().splitlines() if pids.exists() else []


def _same_run(text: str) -> str:
    """What a run printed, without what differs from run to run (durations, the report's path)."""
    text = re.sub(r"=* (.*) in \d+\.\d+s( \(\d+:\d+:\d+\))? =*", r"\1 in Xs", text)
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


@pytest.mark.parametrize("course", list(COURSES))
def test_two_lanes_report_what_one_lane_reports(tmp_path: Path, course: str) -> None:
    _course(tmp_path, COURSES[course])
    one, one_pids = _grade(tmp_path, 1)
    two, two_pids = _grade(tmp_path, 2)

    assert one.returncode == two.returncode == 1, one.stdout + one.stderr + two.stdout + two.stderr
    assert _same_run(two.stdout) == _same_run(one.stdout)
    assert two.stderr == one.stderr
    assert _report(tmp_path / "report-2.json") == _report(tmp_path / "report-1.json")
    assert _junit(tmp_path / "junit-2.xml") == _junit(tmp_path / "junit-1.xml")
    assert "failed" in one.stdout.splitlines()[-1] and "not started" in one.stdout.splitlines()[-1]

    # The same tests ran, in the same order within each process; with two lanes, the last challenge in
    # a process of its own, at the same time as the others (so their lines interleave in the file).
    one_ran, two_ran = _processes(one_pids), _processes(two_pids)
    assert _in_order(two_pids) == _in_order(one_pids)
    assert len(set().union(*one_ran.values())) == 1
    assert len(two_ran["03_several_calls"]) == 1
    assert two_ran["03_several_calls"] != two_ran["01_apply_tool_results"] == two_ran["02_bounded_loop"]


def test_a_run_that_stops_at_its_first_failure_keeps_one_lane(tmp_path: Path) -> None:
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    done, pids = _grade(tmp_path, 2, "-x")

    assert done.returncode == 1, done.stdout + done.stderr
    assert len(set(_processes(pids).get("02_bounded_loop", set()) | _processes(pids)["01_apply_tool_results"])) == 1
    assert "03_several_calls" not in _processes(pids), "-x stopped at 02's first test, before 03 ran anywhere"
    assert "stopping after 1 failures" in done.stdout


def test_tests_the_second_lane_did_not_report_run_in_the_first(tmp_path: Path) -> None:
    _course(tmp_path, COURSES["a failing challenge in the second lane"])
    one, one_pids = _grade(tmp_path, 1)
    test = next(line.rsplit(" ", 1)[0] for line in one_pids if "03_several_calls" in line)
    cut = [line.rsplit(" ", 1)[0] for line in one_pids].index(test) + 3
    died, pids = _grade(tmp_path, 2, die=[line.rsplit(" ", 1)[0] for line in one_pids][cut])

    assert died.returncode == one.returncode == 1
    assert "sandbox: the second grading lane ended early; its tests ran in the first lane instead." in died.stdout
    # The notice breaks the line of progress letters; the letters, the failures and the summary are the same.
    assert _letters(died.stdout) == _letters(one.stdout) and len(_letters(one.stdout)) == 68
    assert _same_run(died.stdout).split("= FAILURES =")[1] == _same_run(one.stdout).split("= FAILURES =")[1]
    assert _report(tmp_path / "report-2.json") == _report(tmp_path / "report-1.json")
    # The tests of 03 before the crash ran in the second lane; the one it died in and the rest, here.
    ran = [line.rsplit(" ", 1) for line in pids]
    first = {pid for nodeid, pid in ran if "01_apply_tool_results" in nodeid}
    assert [pid in first for nodeid, pid in ran if "03_several_calls" in nodeid] == [False] * 3 + [True] * 17


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
            row["name"]: {name: {**cell, "at": None} for name, cell in row["cells"].items()}  # when it was posted
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
