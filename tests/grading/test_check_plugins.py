"""`sandbox check` grades with the sandbox's own pytest plugin alone: a plugin some other package of the
learner's venv installs (a framework's tracer, anyio's, respx's) is neither imported nor run by a check,
where each one cost every check its import; a plain `pytest` in the same venv still loads it.

The other package is a distribution made on the spot (a `.dist-info` with a `pytest11` entry point on
`PYTHONPATH`, which is all pytest's autoloading looks for); its plugin leaves a file when imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _venv_with_another_plugin(where: Path) -> dict[str, str]:
    site = where / "site"
    (site / "other_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "other_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: other-plugin\n")
    (site / "other_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nother = other_plugin\n")
    (site / "other_plugin.py").write_text(
        "import os\nfrom pathlib import Path\n\nPath(os.environ['OTHER_PLUGIN_MARK']).write_text('imported')\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env["OTHER_PLUGIN_MARK"] = str(where / "imported")
    return env


def test_a_check_loads_no_plugin_but_the_sandboxs(tmp_path: Path) -> None:
    course = tmp_path / "challenges"
    course.mkdir()
    shutil.copy(ROOT / "challenges" / "hints.toml", course)
    shutil.copytree(ROOT / "challenges" / "02_bounded_loop", course / "02_bounded_loop")
    shutil.copy(ROOT / "solutions" / "02_bounded_loop.py", course / "02_bounded_loop" / "exercise.py")
    env = _venv_with_another_plugin(tmp_path)
    mark = Path(env["OTHER_PLUGIN_MARK"])

    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert mark.exists(), "the made-up distribution's plugin should autoload in a plain pytest run"
    mark.unlink()

    check = subprocess.run(
        [sys.executable, "-m", "sandbox", "check", "2", "--dir", str(course)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "02_bounded_loop  passed" in check.stdout, check.stdout
    assert not mark.exists(), "sandbox check imported a plugin grading does not use"
