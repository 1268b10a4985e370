"""A warm grader for `sandbox watch`: one process keeps pytest, hypothesis, the grading machinery and
the worker zygote loaded between saves, and grades each save in a new in-process pytest session.

Why: a cold `pytest` pays Python's start, the imports of pytest, hypothesis and the sandbox, and the
zygote's own start on every save, most of a second before the first test; a save re-graded here pays
only for its tests. Isolation is the cold run's: each session grades each challenge in a fresh worker
forked from the zygote (learner code never runs in this process), reports through the same plugin,
and its verdicts are read from the report it writes, as `Progress.run` reads a cold run's.

The process is the CLI's child, reached through its stdin (one JSON list of pytest arguments a line)
and a pipe on which it answers each session's exit status. Its output is the CLI's terminal. It
touches nothing but what a cold pytest run would: the session's report, and the challenge state file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

__all__ = ["WarmGrader", "forget_test_modules", "main"]


class WarmGrader:
    """The grading process, started on first use and started again if it ever ends."""

    def __init__(self, cwd: Path, challenges: Path) -> None:
        self.cwd = cwd
        self.challenges = challenges
        self._process: subprocess.Popen[bytes] | None = None
        self._answers: IO[bytes] | None = None

    def run(self, arguments: Sequence[str]) -> int:
        """One pytest session with `arguments`; its exit status (-1 if the process died during it)."""
        process, answers = self._started()
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(list(arguments)).encode() + b"\n")
            process.stdin.flush()
            line = answers.readline()
        except OSError:
            line = b""
        if not line:  # it ended mid-session: the next save gets a new one
            self.close()
            return -1
        return int(line)

    def _started(self) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
        if self._process is not None and self._process.poll() is None and self._answers is not None:
            return self._process, self._answers
        self.close()
        theirs, mine = os.pipe()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "sandbox.grading.judge._warm", str(mine), str(self.challenges)],
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            pass_fds=[mine],
        )
        os.close(mine)
        self._answers = os.fdopen(theirs, "rb")
        return self._process, self._answers

    def close(self) -> None:
        """End the process: closing its stdin ends its loop; it is killed if it does not end soon."""
        process, answers, self._process, self._answers = self._process, self._answers, None, None
        if answers is not None:
            answers.close()
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def forget_test_modules(challenges: Path) -> None:
    """Drop the challenge test modules an earlier session in this process imported: those of
    `challenges`, so an edited test file is read again, and any of the same name from another folder,
    which pytest would refuse as an import file mismatch. (The learner's exercise is never imported in
    the grader's process: the workers import it.)"""
    names = {path.stem for path in challenges.glob("*/test_*.py")}
    # Compared as text, the folder spelled as given and resolved: resolving every loaded module's path
    # (hundreds of them) took a tenth of a second, twice per `sandbox check`.
    inside = tuple({f"{challenges}{os.sep}", f"{challenges.resolve()}{os.sep}"})
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name in names or (isinstance(path, str) and path.startswith(inside)):
            del sys.modules[name]


def main() -> None:
    import pytest

    answers = os.fdopen(int(sys.argv[1]), "w")
    challenges = Path(sys.argv[2]).resolve()
    try:
        for line in sys.stdin:
            forget_test_modules(challenges)
            try:
                code = int(pytest.main(json.loads(line)))
            except SystemExit as exit_:  # a plugin's usage error: answered as pytest's own exit would be
                code = exit_.code if isinstance(exit_.code, int) else 4
            sys.stdout.flush()
            answers.write(f"{code}\n")
            answers.flush()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole terminal's process group: the CLI says goodbye
        pass


if __name__ == "__main__":
    main()
