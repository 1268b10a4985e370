"""Prove the sandbox (issue 17): each trick of `tests/exploits/` that reaches past the learner's own process earns
nothing in a run of its own, cannot kill, stop or outlive the grader, and cannot change the next run's verdict;
under bubblewrap and under the fallback (plain processes, with the uid drop when the grader is root).

Every run grades a throwaway copy of the checkout (its own `sandbox/`, `challenges/`, `solutions/`) with a
throwaway HOME, as an instructor would: `pytest challenges/... --impl DIR --report PATH --isolation MODE`, the
tricks together, each on a challenge of its own (each earns 0 only if none of them got through). The run must
finish by itself with exit status 1 and an honest report (every test failed, 0 points) that nothing rewrites
afterwards; the copy must be byte-identical afterwards; and the next run in the same copy, of the challenges'
untouched stubs, must be honest too (every test "not started").

`SANDBOX_REQUIRE_BWRAP=1` (set by `.ci/run`) makes the bubblewrap runs fail rather than skip where it is not
usable. The fallback's runs need a grader running as root: its uid drop is what stops these tricks there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from sandbox.grading.boundary._isolation import choose

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXPLOITS = ROOT / "tests" / "exploits"
SELECTION = "openai and not responses"
TRICKS = {
    "resolve_solutions": "04_report_runaway",
    "ptrace_grader": "06_detect_the_end",
    "kill_zygote": "07_failing_tools",
    "signal_grader": "02_bounded_loop",
    "poison_next_run": "03_several_calls",
    "edit_scenarios": "09_keep_the_whole_turn",
    "collector_at_import": "05_streaming",
}
"""Trick -> the challenge it is graded as (its module in tests/exploits/<trick>/<challenge>.py)."""
FALLBACK_CANNOT_STOP = {"resolve_solutions"}
"""What only bubblewrap stops: docs/teach/security.md names each."""
SANDBOX_TRICKS = {
    *TRICKS, "block_forever", "setsid_grandchild", "signal_zygote", "keyring_carry", "tmp_carry", "reload_collector",
    "build_escape",
}  # fmt: skip
POISON = "zz_sandbox_exploit_poison.pth"


def _usable(mode: str) -> None:
    if mode == "process" and os.geteuid() != 0:
        pytest.skip("the fallback stops these tricks by its uid drop, which needs a grader running as root")
    if mode in ("auto", "strict") and not choose("auto").sandboxed:
        if os.environ.get("SANDBOX_REQUIRE_BWRAP") == "1":
            pytest.fail(f"SANDBOX_REQUIRE_BWRAP=1, but bubblewrap is not usable: {choose('auto').why}")
        pytest.skip(f"bubblewrap is not usable here: {choose('auto').why}")


@pytest.fixture
def checkout() -> Iterator[Path]:
    """A copy of the checkout, readable (not writable) by the unprivileged user learner code runs as."""
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-exploit-"))
    try:
        copy = scratch / "checkout"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".sandbox-state.json*", "*.egg-info")
        for name in ("sandbox", "challenges", "solutions"):
            shutil.copytree(ROOT / name, copy / name, ignore=ignore)
        shutil.copyfile(ROOT / "pyproject.toml", copy / "pyproject.toml")
        (scratch / "home").mkdir()
        for folder, _, _ in os.walk(scratch):
            os.chmod(folder, 0o755)
        yield copy
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for folder in site.getsitepackages():  # leave the machine as found, whatever happened
            Path(folder, POISON).unlink(missing_ok=True)


def _digest(copy: Path) -> dict[str, str]:
    found = {}
    for name in ("sandbox", "challenges"):
        for path in sorted((copy / name).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".sandbox-state"):
                found[str(path.relative_to(copy))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _pytest(copy: Path, mode: str, *argv: str, then: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`pytest ARGV` in the copy; with `then`, a second session in the same process (`pytest.main` twice, as
    a script grading one learner after another would), whose exit status the process exits with."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env.update(HOME=str(copy.parent / "home"), PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    common = ["-k", SELECTION, "--isolation", mode, "--challenge-timeout", "2", "-q", "-p", "no:cacheprovider"]
    common += ["--rootdir", str(copy)]
    command = [sys.executable, "-m", "pytest", *argv, *common]
    if then:
        script = "import sys, pytest; pytest.main(sys.argv[1:%d]); sys.exit(pytest.main(sys.argv[%d:]))"
        first, second = [*argv, *common], [*then, *common]
        command = [sys.executable, "-c", script % (len(first) + 1, len(first) + 1), *first, *second]
    # Generous, and never reached by a grader that finishes by itself: a stopped one is killed here.
    return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=240, check=False)


def _report(path: Path) -> dict[str, object]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_the_reference_solutions_pass_under_the_isolation(mode: str, checkout: Path) -> None:
    """What the sandbox takes away (the checkout, the network, root, files the grader reads later) is
    nothing a right solution needs: in the fallback, its user may not even read the interpreter's folder."""
    _usable(mode)
    done = _pytest(checkout, mode, "challenges/", "--impl", str(checkout / "solutions"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1500:]


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_the_tricks_earn_nothing_and_leave_the_next_run_honest(mode: str, checkout: Path) -> None:
    _usable(mode)
    tricks = {trick: name for trick, name in TRICKS.items() if mode == "auto" or trick not in FALLBACK_CANNOT_STOP}
    before = _digest(checkout)
    impl = checkout.parent / "impl"
    impl.mkdir()
    for trick, name in tricks.items():
        shutil.copyfile(EXPLOITS / trick / f"{name}.py", impl / f"{name}.py")
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    folders = [f"challenges/{name}" for name in sorted(tricks.values())]
    done = _pytest(checkout, mode, *folders, "--impl", str(impl), "--report", str(report))
    output = done.stdout[-3000:] + done.stderr[-1500:]
    assert done.returncode == 1, f"the grader did not finish by itself with exit 1:\n{output}"
    assert "INTERNALERROR" not in output, output
    graded = _report(report)
    tests = graded["tests"]
    assert isinstance(tests, list) and {test["extra_data"]["challenge"] for test in tests} == set(tricks.values())
    by_name = {name: trick for trick, name in tricks.items()}
    earned = [f"{by_name[test['extra_data']['challenge']]}: {test['name']}" for test in tests if test["score"]]
    assert not earned and graded["score"] == 0, f"earned {earned}:\n{output}"
    assert all(test["status"] == "failed" for test in tests)
    time.sleep(2)  # what a trick left behind to rewrite the report would have done so by now
    assert _report(report) == graded, "the report changed after the grader exited"
    assert _digest(checkout) == before, "the checkout's package or challenges changed"
    assert not any(Path(folder, POISON).exists() for folder in site.getsitepackages()), "a trick wrote a .pth"
    report.unlink()
    honest = _pytest(checkout, mode, *folders, "--report", str(report))
    assert honest.returncode == 1, honest.stdout[-3000:]
    after = _report(report)
    assert after["score"] == 0 and {test["extra_data"]["outcome"] for test in after["tests"]} == {"not started"}


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_a_signalled_zygote_costs_no_later_challenge_its_grade(mode: str, checkout: Path) -> None:
    """Challenge 01 signals the zygote of its lane (SIGINT, SIGTERM, ..., SIGKILL) as it is imported; 02 and 03,
    graded after it in the same lane with the reference solutions, still pass in full."""
    _usable(mode)
    impl = checkout.parent / "impl"
    impl.mkdir()
    shutil.copyfile(EXPLOITS / "signal_zygote" / "01_apply_tool_results.py", impl / "01_apply_tool_results.py")
    for name in ("02_bounded_loop", "03_several_calls"):
        shutil.copyfile(checkout / "solutions" / f"{name}.py", impl / f"{name}.py")
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    folders = ["challenges/01_apply_tool_results", "challenges/02_bounded_loop", "challenges/03_several_calls"]
    done = _pytest(checkout, mode, *folders, "--impl", str(impl), "--report", str(report), "--sandbox-lanes", "1")
    output = done.stdout[-3000:] + done.stderr[-1500:]
    assert done.returncode == 1 and "INTERNALERROR" not in output, output
    tests = _report(report)["tests"]
    assert isinstance(tests, list)
    wrong = [
        f"{test['name']}: {test['status']}\n{test['output'][:600]}"
        for test in tests
        if test["status"] != ("failed" if test["extra_data"]["challenge"] == "01_apply_tool_results" else "passed")
    ]
    assert not wrong, "\n\n".join(wrong)


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_a_submission_that_blocks_forever_costs_one_deadline_per_challenge(mode: str, checkout: Path) -> None:
    """Each challenge's first test waits out its deadline; every later one fails at once, saying why."""
    _usable(mode)
    impl = checkout.parent / "impl"
    impl.mkdir()
    names = sorted(path.name for path in (checkout / "challenges").iterdir() if path.name[:2].isdigit())
    for name in names:
        shutil.copyfile(EXPLOITS / "block_forever" / "02_bounded_loop.py", impl / f"{name}.py")
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    done = _pytest(checkout, mode, "challenges/", "--impl", str(impl), "--report", str(report))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-1500:]
    tests = _report(report)["tests"]
    assert isinstance(tests, list)
    hung = {name: 0 for name in names}
    for test in tests:
        said = " ".join(test["output"].split())
        assert test["score"] == 0 and ("did not finish within" in said or "Did not run:" in said), said[:600]
        if "did not finish within 2 s" in said and not said.startswith("Did not run"):
            hung[test["extra_data"]["challenge"]] += 1
    assert all(count >= 1 for count in hung.values()), hung
    assert sum(test["output"].startswith("Did not run:") for test in tests) >= len(tests) - 3 * len(names)


def test_the_run_deadline_fails_what_is_left_saying_so(checkout: Path) -> None:
    """Each challenge's first test hangs until its deadline (2 s, or what is left of the run's 3 s), so
    each lane (at most 3) starts at most two challenges before the run's deadline: of eight, the later
    ones are never reached, however fast the machine, and say why."""
    _usable("auto" if choose("auto").sandboxed else "process")
    impl = checkout.parent / "impl"
    impl.mkdir()
    names = ["02_bounded_loop", "03_several_calls", "04_report_runaway", "05_streaming", "06_detect_the_end",
             "07_failing_tools", "09_keep_the_whole_turn", "10_retry_without_repeating"]  # fmt: skip
    for name in names:
        shutil.copyfile(EXPLOITS / "block_forever" / "02_bounded_loop.py", impl / f"{name}.py")
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    folders = [f"challenges/{name}" for name in names]
    done = _pytest(checkout, "auto", *folders, "--impl", str(impl), "--report", str(report), "--run-deadline", "3")
    assert done.returncode == 1, done.stdout[-3000:]
    said = [test["output"] for test in _report(report)["tests"]]  # type: ignore[union-attr]
    assert any("the run's deadline (3 s, --run-deadline) had passed" in text for text in said), said[-1][:500]


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_a_program_s_setsid_grandchild_does_not_outlive_its_case(mode: str, tmp_path: Path) -> None:
    """`sandbox grade`: nothing a program starts, even in a session of its own, survives the case."""
    _usable(mode)
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-exploit-"))
    try:
        os.chmod(scratch, 0o777)  # a survivor could write here: its marker would grow after grading
        marker, report = scratch / "marker", scratch / "results.json"
        program = scratch / "program.sh"
        shutil.copyfile(EXPLOITS / "setsid_grandchild" / "program.sh", program)
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        command = [sys.executable, "-m", "sandbox", "grade", "6", "--wire", "openai", "--isolation", mode]
        command += ["--report", str(report), "--timeout", "5", "--", str(program), str(report), str(marker)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-1500:]
        graded = _report(report)
        assert graded["score"] == 0 and graded["tests"], graded
        size = marker.stat().st_size if marker.exists() else 0
        time.sleep(2)
        assert (marker.stat().st_size if marker.exists() else 0) == size, "a grandchild outlived grading"
        assert _report(report) == graded
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_strict_isolation_refuses_to_grade_without_bubblewrap(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on this PATH
    code = "import sandbox.cli as c, sys; sys.exit(c.main(['grade', '6', '--isolation', 'strict', '--', 'x']))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "--isolation strict: bubblewrap is not usable here (`bwrap` is not installed)" in done.stderr + done.stdout


def _learner(copy: Path, name: str, modules: dict[str, Path]) -> Path:
    """A submission folder beside the copy: challenge name -> the module graded as it."""
    folder = copy.parent / name
    folder.mkdir()
    for challenge, module in modules.items():
        shutil.copyfile(module, folder / f"{challenge}.py")
    os.chmod(folder, 0o755)
    return folder


def _earned_nothing(report: Path, done: subprocess.CompletedProcess[str]) -> None:
    output = done.stdout[-3000:] + done.stderr[-1500:]
    assert done.returncode == 1 and "INTERNALERROR" not in output, output
    graded = _report(report)
    tests = graded["tests"]
    assert isinstance(tests, list) and tests, output
    earned = [test["name"] for test in tests if test["score"] or test["status"] != "failed"]
    assert not earned and graded["score"] == 0, f"earned {earned}:\n{output}"


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_a_keyring_left_by_one_learner_is_empty_for_the_next(mode: str, checkout: Path) -> None:
    """Alice's run leaves skyl's collector in the kernel keyring of the user learner code runs as; Bob's
    challenge 05, graded next, where the collector is taken away, finds nothing there."""
    _usable(mode)
    module = EXPLOITS / "keyring_carry" / "05_streaming.py"
    alice = _learner(checkout, "alice", {"01_apply_tool_results": module})
    bob = _learner(checkout, "bob", {"05_streaming": module})
    _pytest(checkout, mode, "challenges/01_apply_tool_results", "--impl", str(alice))
    report = checkout / "results.json"
    _earned_nothing(
        report, _pytest(checkout, mode, "challenges/05_streaming", "--impl", str(bob), "--report", str(report))
    )


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_files_one_learner_left_are_gone_for_the_next_in_the_same_process(mode: str, checkout: Path) -> None:
    """One process grades Alice, then Bob (`pytest.main` twice): what Alice's code wrote to /tmp (skyl's
    collector) is not there for Bob's challenge 05, where the collector is taken away."""
    _usable(mode)
    module = EXPLOITS / "tmp_carry" / "05_streaming.py"
    alice = _learner(checkout, "alice", {"01_apply_tool_results": module})
    bob = _learner(checkout, "bob", {"05_streaming": module})
    report = checkout / "results.json"
    first = ["challenges/01_apply_tool_results", "--impl", str(alice), "--sandbox-lanes", "1"]
    then = ["challenges/05_streaming", "--impl", str(bob), "--report", str(report), "--sandbox-lanes", "1"]
    _earned_nothing(report, _pytest(checkout, mode, *first, then=then))


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_the_collector_taken_away_stays_away(mode: str, checkout: Path) -> None:
    """Challenge 05 forbids skyl's collector: reloading its module, importing its file by path, reading
    the file or its bytecode finds a stand-in that raises."""
    _usable(mode)
    impl = _learner(checkout, "impl", {"05_streaming": EXPLOITS / "reload_collector" / "05_streaming.py"})
    report = checkout / "results.json"
    done = _pytest(checkout, mode, "challenges/05_streaming", "--impl", str(impl), "--report", str(report))
    _earned_nothing(report, done)


def test_strict_isolation_refuses_to_grade_without_a_seccomp_filter(tmp_path: Path) -> None:
    _usable("strict")
    (tmp_path / "pyseccomp.py").write_text("raise ImportError('not here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    code = "import sandbox.cli as c, sys; sys.exit(c.main(['grade', '6', '--isolation', 'strict', '--', 'x']))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    said = " ".join((done.stderr + done.stdout).split())
    assert "--isolation strict: no seccomp filter can be built here: the `pyseccomp` package is not installed" in said
    auto = code.replace("'strict'", "'auto'")  # said unasked: the filter is missing, which is not the default
    done = subprocess.run([sys.executable, "-c", auto], env=env, capture_output=True, text=True, check=False)
    assert "no seccomp filter: the `pyseccomp` package is not installed" in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_a_build_step_sees_and_writes_only_the_program_s_folder(mode: str, tmp_path: Path) -> None:
    """`sandbox grade --build`: the build runs in the program's sandbox; what the submission's own build
    step does (write outside its folder, copy a file of the checkout in) reaches nothing."""
    _usable(mode)
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-exploit-"))
    try:
        submission, outside = scratch / "submission", scratch / "outside"
        submission.mkdir()
        outside.mkdir()
        for folder in (scratch, submission, outside):
            os.chmod(folder, 0o777)  # the build's user may write them: only the sandbox stops it
        shutil.copyfile(EXPLOITS / "build_escape" / "build.sh", submission / "build.sh")
        marker, secret = outside / "marker", ROOT / "solutions" / "01_apply_tool_results.py"
        command = [sys.executable, "-m", "sandbox", "grade", "1", "--wire", "openai", "--isolation", mode]
        command += ["--timeout", "5", "--build", f"sh build.sh {marker} {secret}", "--", "./loop"]
        env = {**os.environ, "HOME": str(scratch), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(command, cwd=submission, env=env, capture_output=True, text=True, timeout=240)
        output = done.stdout[-3000:] + done.stderr[-1500:]
        assert not marker.exists(), "the build wrote outside the program's folder"
        stolen = submission / "stolen.txt"
        assert not stolen.exists() or not stolen.read_text(), "the build read the grader's checkout"
        assert "Building (in the program's sandbox" in output, output
        if mode == "strict":  # not the default: the run's first line says where, as whom, and how capped
            assert "own pids, users and network, seccomp filter" in output and "capped by rlimits (" in output
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
