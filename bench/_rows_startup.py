"""Row: pytest's start-up on one trivial test with the sandbox's plugin loaded against the same run
with it disabled (`-p no:sandbox`), in a fresh venv that has only the package installed (`pip install
.`, not editable, from the index pip is configured with), measured in one run, runs interleaved.
Works in a temporary folder; the checkout is only read."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import ROOT, Row, Settings


def _fresh_venv(folder: Path) -> tuple[Path, int]:
    """A venv with the package installed, and how many packages the install brought (itself included)."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True)
    python = folder / "bin" / "python"
    before = _packages(python)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(ROOT)], check=True, capture_output=True)
    return python, len(_packages(python) - before)


def _packages(python: Path) -> set[str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True, text=True
    )
    return {line.split("==")[0].lower() for line in listed.stdout.splitlines() if line}


def row_startup(settings: Settings) -> list[Row]:
    name = "pytest start-up, one trivial test, plugin loaded"
    with tempfile.TemporaryDirectory() as tmp:
        python, brought = _fresh_venv(Path(tmp) / "venv")
        tests = Path(tmp) / "project"
        tests.mkdir()
        (tests / "test_trivial.py").write_text("def test_trivial():\n    pass\n")
        command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_trivial.py"]
        for warm in (command, [*command, "-p", "no:sandbox"]):  # bytecode compiled once, as a second run finds it
            subprocess.run(warm, cwd=tests, capture_output=True, check=True)
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(3 if settings.quick else 7):
            for side, extra in (("with", []), ("without", ["-p", "no:sandbox"])):
                started = time.perf_counter()
                subprocess.run([*command, *extra], cwd=tests, capture_output=True, check=True)
                times[side].append(time.perf_counter() - started)
    with_plugin, without = min(times["with"]), min(times["without"])
    ratio = with_plugin / without
    return [
        Row(
            name,
            ratio,
            "the same run, -p no:sandbox",
            "<= 1.1x",
            ratio <= 1.1,
            f"{with_plugin:.2f} s vs {without:.2f} s; `pip install .` brings {brought} packages",
        )
    ]
