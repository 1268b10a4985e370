"""`--report PATH`: Gradescope's results.json, rewritten after every test (`--sandbox-cli-report`: at the end).

Every collected test is written first as "did not run", then updated as it finishes, so a run that
crashes or is killed still leaves a file listing what was graded and what was not.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..boundary._text import escaped
from ._state import write_json
from ._summary import FAILED, PASSED, Tally

__all__ = ["ResultsFile"]

NOT_RUN = "Did not run: the test run stopped before this test (a crash, or the process was killed)."


class ResultsFile:
    def __init__(
        self, path: Path, tests: Sequence[tuple[str, str]], implementation: str, *, as_it_goes: bool = True
    ) -> None:
        """`tests` are (node id, challenge name) pairs in run order. Without `as_it_goes` the file is
        written once, by the caller's `write()` at the end: for `sandbox check` and `watch`, which read it
        only then. Every test's output is escaped (`boundary._text`): it is learner text."""
        self.path = path
        self.as_it_goes = as_it_goes
        self.implementation = escaped(implementation)
        self._started = time.monotonic()
        self._void = ""
        self._tests: dict[str, dict[str, Any]] = {}
        counters: dict[str, int] = {}
        for nodeid, challenge in tests:
            counters[challenge] = counters.get(challenge, 0) + 1
            self._tests[nodeid] = {
                "name": f"{challenge}: {nodeid.rsplit('::', 1)[-1]}",
                "number": f"{int(challenge[:2]) if challenge[:2].isdigit() else 0}.{counters[challenge]}",
                "status": "failed",
                "score": 0.0,
                "max_score": 1.0,
                "output": NOT_RUN,
                "tags": [challenge],
                "extra_data": {"challenge": challenge, "outcome": "not run", "nodeid": nodeid},
            }
        if as_it_goes:
            self.write()

    def record(self, nodeid: str, outcome: str, output: str) -> None:
        entry = self._tests[nodeid]
        passed = outcome == PASSED
        entry.update(status="passed" if passed else "failed", score=1.0 if passed else 0.0, output=escaped(output))
        entry["extra_data"]["outcome"] = outcome
        if self.as_it_goes:
            self.write()

    def void(self, problems: Sequence[str]) -> None:
        """The graded code changed what the grader judges with: every test fails, saying so."""
        said = "The graded code changed what the grader judges with, so this run counts for nothing:\n"
        said += "\n".join(f"- {problem}" for problem in problems)
        self._void = said
        for entry in self._tests.values():
            entry.update(status="failed", score=0.0, output=f"{said}\n\n{entry['output']}".rstrip())
            if entry["extra_data"]["outcome"] == PASSED:
                entry["extra_data"]["outcome"] = FAILED

    def write(self) -> None:
        tallies: dict[str, Tally] = {}
        for nodeid, entry in self._tests.items():
            outcome = entry["extra_data"]["outcome"]
            tally = tallies.setdefault(entry["extra_data"]["challenge"], Tally())
            tally.collected += 1
            if outcome != "not run":
                tally.add(outcome, nodeid)
        done = sum(tally.status == "passed" for tally in tallies.values())
        score = sum(entry["score"] for entry in self._tests.values())
        not_run = sum(tally.collected - tally.total for tally in tallies.values())
        summary = f"{done}/{len(tallies)} challenges passed; {score:g}/{len(self._tests)} tests passed."
        if not_run:
            summary += f" {not_run} did not run (the run stopped early)."
        if self._void:
            summary = f"{self._void}\n{summary}"
        write_json(
            self.path,
            {
                "score": score,
                "execution_time": round(time.monotonic() - self._started, 3),
                "output": summary,
                "visibility": "visible",
                "tests": list(self._tests.values()),
                "extra_data": {
                    "implementation": self.implementation,
                    "challenges": {
                        name: {
                            "status": tally.status,
                            "passed": tally.passed,
                            "failed": tally.failed,
                            "not_started": tally.not_started,
                            "not_run": tally.collected - tally.total,
                        }
                        for name, tally in tallies.items()
                    },
                },
            },
        )
