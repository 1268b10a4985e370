"""The README's examples run as written: a newcomer's first copy-paste must work."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str) -> str:
    section = README.split(heading, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def test_readme_loop_runs_and_prints_the_answer() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_block_after("## The lesson's loop"), {})
    assert out.getvalue().strip() == "Paris: sunny in Paris. Tokyo: sunny in Tokyo, local time 21:30."


def test_readme_engineers_example_answers_through_the_official_sdk() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_block_after("## Engineers"), {})
    assert out.getvalue().strip() == "Hello! No tools needed for that."


def test_readme_is_a_front_door() -> None:
    """Short enough to read in a minute: the details live in docs/, which every audience's section links to."""
    assert len(README.splitlines()) < 200
    audiences = ("learn/getting-started", "learn/contract", "teach/room", "agents/mounting")
    for page in audiences:
        assert f"(docs/{page}.md)" in README, page
    for link in re.findall(r"\]\(((?:docs|bench)/[^)#]+|CHANGELOG.md)", README):
        assert (Path(__file__).parents[2] / link).is_file(), link


ROOT = Path(__file__).parents[2]


def _quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert match, "no bash block in the Quick start"
    return [line.split("#", 1)[0].strip() for line in match.group(1).splitlines() if line.strip()]


def test_quick_start_grades_with_the_learners_install_and_tests_with_the_developers() -> None:
    """A learner's first command installs the package alone (no framework suite); the second is the one
    `.ci/run` runs, word for word, so what the README promises is what CI proves."""
    learn, develop = _quick_start()
    assert learn == "pip install -e . && pytest challenges/"
    assert develop == 'pip install -e ".[dev]" && pytest -n auto'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert develop in [line.strip() for line in ci]


_BLOCKED_IMPORTS = r"""
import importlib.abc, importlib.metadata, re, sys

def name(requirement):
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")

def closure(roots):
    allowed, todo = set(), list(roots)
    while todo:
        dist = todo.pop()
        if dist in allowed:
            continue
        allowed.add(dist)
        for requirement in importlib.metadata.requires(dist) or []:
            if "extra ==" not in requirement and (";" not in requirement or eval_marker(requirement)):
                todo.append(name(requirement))
    return allowed

def eval_marker(requirement):
    from packaging.markers import Marker
    return Marker(requirement.split(";", 1)[1]).evaluate({"extra": ""})

allowed = closure(["skyl-sandbox"])
owners = importlib.metadata.packages_distributions()

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.partition(".")[0]
        dists = {d.lower().replace("_", "-") for d in owners.get(top, [])}
        if dists and not dists & allowed:
            raise ImportError(f"{fullname} comes from {sorted(dists)}, which `pip install -e .` does not install")
        return None

sys.meta_path.insert(0, Blocker())
import pkgutil, runpy, sandbox
for module in pkgutil.walk_packages(sandbox.__path__, "sandbox."):
    if module.name != "sandbox.__main__":  # runs the CLI
        __import__(module.name)
for path in sys.argv[1:]:
    runpy.run_path(path, run_name="graded")
print("imported", len(sys.argv) - 1, "files")
"""


@pytest.mark.slow
def test_the_learners_install_is_enough_to_grade() -> None:
    """Every module of the package, every challenge's grading tests and every reference solution import
    with nothing but the package's own dependencies (the `dev` extra's SDKs and frameworks blocked)."""
    import subprocess
    import sys

    files = sorted(str(path) for path in [*ROOT.glob("challenges/*/test_*.py"), *ROOT.glob("solutions/*.py")])
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_IMPORTS, *files], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == f"imported {len(files)} files"
