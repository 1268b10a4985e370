"""The challenge set on disk, the selectors the CLI takes, the state file, and the summary's statuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.grading.judge._meta import challenge_folder, find_root, load_challenges, select
from sandbox.grading.judge._state import State, digest
from sandbox.grading.judge._summary import Tally, bar

ROOT = Path(__file__).resolve().parents[2] / "challenges"


@pytest.mark.parametrize("wanted", ["2", "02", "02_bounded_loop", "bounded_loop", "challenges/02_bounded_loop/"])
def test_select_takes_any_spelling_of_a_challenge(wanted: str) -> None:
    assert select(load_challenges(ROOT), wanted).name == "02_bounded_loop"


@pytest.mark.parametrize("wanted", ["loop", "²"])
def test_select_lists_the_choices_when_nothing_matches(wanted: str) -> None:
    """'²' is a digit to `str.isdigit` but no number to `int`: it was a traceback from `sandbox check ²`."""
    choices = r"The challenges are:\n- 1: 01_apply_tool_results"
    with pytest.raises(LookupError, match=rf"No challenge '{wanted}'\. {choices}"):
        select(load_challenges(ROOT), wanted)


def test_root_is_found_from_inside_and_above(tmp_path: Path) -> None:
    assert find_root(ROOT / "01_apply_tool_results") == ROOT
    assert find_root(ROOT.parent) == ROOT
    assert find_root(tmp_path) is None


def test_only_numbered_folders_under_challenges_are_challenges(tmp_path: Path) -> None:
    assert challenge_folder(ROOT / "02_bounded_loop" / "test_bounded_loop.py") == ROOT / "02_bounded_loop"
    assert challenge_folder(tmp_path / "02_bounded_loop" / "test_x.py") is None
    assert challenge_folder(ROOT.parent / "tests" / "test_plugin.py") is None


def test_state_survives_a_corrupt_file_and_forgets_changed_exercises(tmp_path: Path) -> None:
    (tmp_path / ".sandbox-state.json").write_text("{not json")
    exercise = tmp_path / "exercise.py"
    exercise.write_text("one")
    state = State(tmp_path)
    assert state.hints == {} and state.results == {}
    state.results["01_x"] = {"status": "passed", "digest": digest(exercise)}
    state.save()
    assert State(tmp_path).result("01_x", exercise) == {"status": "passed", "digest": digest(exercise)}
    exercise.write_text("two")
    assert State(tmp_path).result("01_x", exercise) is None


@pytest.mark.parametrize(
    ("tally", "status"),
    [
        (Tally(passed=3, collected=3), "passed"),
        (Tally(passed=2, failed=1), "failing"),
        (Tally(not_started=3), "not started"),
        (Tally(passed=1, not_started=2), "in progress"),
        (Tally(passed=1, collected=3), "incomplete"),
        (Tally(), "not graded"),
    ],
    ids=["passed", "failing", "not-started", "in-progress", "incomplete", "not-graded"],
)
def test_challenge_status(tally: Tally, status: str) -> None:
    assert tally.status == status


def test_progress_bar() -> None:
    assert bar(1, 4, width=8) == "[##------]"
    assert bar(0, 0, width=4) == "[----]"
