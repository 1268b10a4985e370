"""The package as an engineer gets it: a built wheel installs into a fresh venv and runs the README's
engineer quick start, and an editable install shows its types to mypy. Each builds in a temporary
folder; dependencies come from the package index pip is configured with."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _fresh_venv(folder: Path) -> Path:
    """An empty venv; this interpreter's pip installs into it (`pip --python`), so it needs none of its own."""
    venv.create(folder, with_pip=False)
    return folder / "bin" / "python"


def _install(python: Path, *requirements: str) -> None:
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile", *requirements]
    subprocess.run(command, check=True, capture_output=True)


def _readme_quick_start() -> str:
    """The engineers' example in the README, as the README shows it."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Engineers", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "README.md: the Engineers section lost its python example"
    return found.group(1)


def test_a_built_wheel_runs_the_engineers_quick_start(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("skyl_sandbox-*.whl")
    python = _fresh_venv(tmp_path / "venv")
    _install(python, str(wheel), "anthropic")
    (tmp_path / "quick_start.py").write_text(_readme_quick_start(), encoding="utf-8")
    ran = subprocess.run(
        [str(python), "quick_start.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "Hello! No tools needed for that."


def test_an_editable_install_shows_its_types_to_mypy(tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv")
    _install(python, "--no-deps", "-e", str(ROOT))
    (tmp_path / "uses_sandbox.py").write_text(
        "import sandbox\nfrom sandbox import skyl\n\n"
        "engine: sandbox.Engine = sandbox.Engine('single_call')\n"
        "client: skyl.Client = skyl.Client('openai', transport=sandbox.transport(engine=engine))\n"
        "wrong: int = sandbox.Engine('single_call')\n",
        encoding="utf-8",
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", str(python), "--no-incremental", "uses_sandbox.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    # Only the deliberate mistake: the package was found and its types were read.
    assert "import-not-found" not in checked.stdout, checked.stdout
    assert checked.stdout.count("error:") == 1, checked.stdout
    assert 'Incompatible types in assignment (expression has type "Engine", variable has type "int")' in checked.stdout
