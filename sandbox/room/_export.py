"""The room, exported: one CSV row per learner and challenge, and one Gradescope `results.json` per learner.

May touch: nothing (pure functions of the room's snapshot to bytes). What the room knows is what each
learner's grader posted from their own machine: the export is a record of the workshop, built from
the last run each learner sent for each challenge, unless the instructor's own grading of that
challenge was recorded (`RoomService.verify`): that one is used, and every file says which is which.
Scores are on `--report`'s scale: one point per test passed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import time
import zipfile
from typing import Any

__all__ = ["folder_name", "results_json", "results_zip", "room_csv"]

COLUMNS = ["learner", "challenge", "status", "passed", "total", "source", "stuck", "last_run_utc", "rules"]
"""`source`: `verified` (the instructor's own grading, which the other columns then give) or
`self-reported` (the learner's grader's last run)."""


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)) if at is not None else ""


def _safe_cell(text: str) -> str:
    """A value a spreadsheet will not run as a formula (CSV injection): a leading =, +, - or @ is quoted."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def room_csv(snapshot: dict[str, Any]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    challenges = [item["name"] for item in snapshot["challenges"]]
    for learner in snapshot["learners"]:
        for challenge in challenges:
            cell, verified = learner["cells"].get(challenge), learner["verified"].get(challenge)
            shown = verified or cell
            if shown is None:
                writer.writerow([_safe_cell(learner["name"]), challenge, "no run", 0, 0, "", "no", "", ""])
                continue
            writer.writerow(
                [
                    _safe_cell(learner["name"]),
                    challenge,
                    shown["status"],
                    shown["passed"],
                    shown["total"],
                    "verified" if verified else "self-reported",
                    "yes" if cell and cell["stuck"] else "no",
                    _when(shown["at"]),
                    _safe_cell("; ".join(cell["rules"])) if cell else "",
                ]
            )
    return out.getvalue().encode("utf-8")


def results_json(snapshot: dict[str, Any], learner: dict[str, Any]) -> dict[str, Any]:
    """Gradescope's results.json for one learner, on `--report`'s scale: one point per test passed.
    One entry per challenge, its `max_score` the challenge's tests (for a challenge the learner never
    ran, the most tests any learner in the room reported for it)."""
    tests, passed_challenges, verified = [], 0, []
    for number, item in enumerate(snapshot["challenges"], 1):
        cell = learner["verified"].get(item["name"]) or learner["cells"].get(item["name"])
        if item["name"] in learner["verified"]:
            verified.append(item["name"])
        known = max(
            (row["cells"][item["name"]]["total"] for row in snapshot["learners"] if item["name"] in row["cells"]),
            default=0,
        )
        status = cell["status"] if cell else "no run"
        passed_challenges += status == "passed"
        source = "verified" if item["name"] in verified else "self-reported"
        output = f"{status}: {cell['passed']}/{cell['total']} tests passed ({source})" if cell else "No run reported."
        if cell and cell.get("rules"):
            output += "\nRules broken: " + "; ".join(cell["rules"])
        tests.append(
            {
                "name": f"{item['name']}: {item['title']}".rstrip(": "),
                "number": str(number),
                "score": float(cell["passed"]) if cell else 0.0,
                "max_score": float(cell["total"] if cell else known),
                "status": "passed" if status == "passed" else "failed",
                "output": output,
                "tags": [item["name"]],
            }
        )
    score = sum(float(str(test["score"])) for test in tests)
    most = sum(float(str(test["max_score"])) for test in tests)
    if len(verified) == len(tests):
        said = "all verified by the instructor's grading"
    elif verified:
        said = f"verified by the instructor's grading for {', '.join(verified)}; the rest self-reported, not verified"
    else:
        said = "as last reported to the room by their own grader (self-reported, not verified)"
    return {
        "score": score,
        "output": (
            f"{learner['name']}: {passed_challenges}/{len(tests)} challenges passed; {score:g}/{most:g} tests "
            f"passed, {said}."
        ),
        "visibility": "visible",
        "tests": tests,
        "extra_data": {
            "learner": learner["name"],
            "last_run_utc": _when(learner["last_run"]),
            "verified": len(verified) == len(tests),
            "verified_challenges": verified,
        },
    }


def folder_name(name: str) -> str:
    """A learner's folder in the zip: their name made safe, then a digest of the name itself, so two
    learners never share a folder (not even on a case-insensitive disk) and each keeps theirs."""
    base = re.sub(r"[^\w.-]+", "_", name, flags=re.ASCII).strip("._")[:40] or "learner"
    return f"{base}-{hashlib.blake2b(name.encode(), digest_size=4).hexdigest()}"


def results_zip(snapshot: dict[str, Any]) -> bytes:
    """A zip holding FOLDER/results.json for every learner (see `folder_name`)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for learner in snapshot["learners"]:
            folder = folder_name(learner["name"])
            body = json.dumps(results_json(snapshot, learner), indent=2, ensure_ascii=False)
            archive.writestr(f"{folder}/results.json", body)
    return out.getvalue()
