"""The documentation site builds strictly, offline: a broken link, a missing page, an anchor that is
gone or a docstring mkdocstrings cannot read fails the build, and so does anything that would fetch
from the network while building."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _offline() -> list[str]:
    """A prefix that runs the command in a network namespace with only the loopback up, where the
    machine allows one (root, or unprivileged user namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False)
    return [unshare, "-rn"] if probe.returncode == 0 else []


@pytest.mark.slow
def test_the_docs_build_strictly_and_offline(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    done = subprocess.run(
        [*_offline(), *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    site = tmp_path / "site"
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "sandbox grade" in cli and "--wire" in cli  # written from the argparse definitions
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "tool_result_message" in api and "SandboxTransport" in api  # from the docstrings
