"""The grader's before-and-after check: what it judges with is put back, the learner's own file never."""

from __future__ import annotations

from pathlib import Path

from sandbox.grading.judge._integrity import Snapshot


def _course(tmp_path: Path) -> Path:
    challenge = tmp_path / "challenges" / "01_apply_tool_results"
    challenge.mkdir(parents=True)
    (challenge / "exercise.py").write_text("def apply_tool_results(): ...\n")
    (challenge / "test_apply_tool_results.py").write_text("def test_x(): ...\n")
    return tmp_path / "challenges"


def test_a_save_of_the_exercise_during_grading_is_kept(tmp_path: Path) -> None:
    challenges = _course(tmp_path)
    snapshot = Snapshot.take([challenges])
    exercise = challenges / "01_apply_tool_results" / "exercise.py"
    exercise.write_text("def apply_tool_results(req, resp, results): return None\n")
    assert snapshot.check() == []
    assert "return None" in exercise.read_text()


def test_a_grading_test_changed_during_grading_is_put_back_and_named(tmp_path: Path) -> None:
    challenges = _course(tmp_path)
    snapshot = Snapshot.take([challenges])
    grading = challenges / "01_apply_tool_results" / "test_apply_tool_results.py"
    grading.write_text("def test_x(): assert True\n")
    (problem,) = snapshot.check()
    assert str(grading) in problem and "put back" in problem
    assert grading.read_text() == "def test_x(): ...\n"
