"""The product's text speaks of the product as it is: no development history in the README, the docs,
the benchmark results or the package (its docstrings, comments and messages). History belongs in
CHANGELOG.md and the commit messages; measurements in bench/RESULTS.md's table.

Each pattern is a diary habit: a run or round of work named by number or order, the load or machine a
figure was taken on, a before -> after figure, "(was X)", "tried and dropped", an issue or a person
credited. The table bench/run.py writes into RESULTS.md (between its markers) is measurement context
of the latest run, generated, and is the one exclusion.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DIARY = {
    "a numbered session": r"\bsessions? \d+",
    "a round of work": r"\brounds? of work\b",
    "an earlier install or run": r"\bearlier installs?\b|\bthe run before\b|\bruns? on other machines\b",
    "a figure's old value": r"\(was [^)]*\)",
    "a before -> after figure": r"\d(?:\.\d+)?\s?(?:k|us|ms|MB|MiB|KB|%|s|x)?\s?->\s?\d",
    "an issue number": r"\bissue \d+\b",
    "the load a figure was taken at": r"\bload average\b|\bat load \d",
    "the machine a figure was taken on": r"\b\d-core (?:VM|machine)\b|\b(?:Xeon|EPYC)\b",
    "something tried and dropped": r"\b(?:tried and dropped|was tried|were tried)\b",
    "who did the work": r"\bthe lead\b|\bother (?:sessions|engineers)\b|\b(?:measured|made) by [a-z]\d\d[a-z]?\b",
    "a commit the text was measured on": r"\bon main at [0-9a-f]{7}\b",
}
PATTERN = re.compile("|".join(f"(?P<p{index}>{regex})" for index, regex in enumerate(DIARY.values())), re.IGNORECASE)
NAMES = list(DIARY)
TEXT = {".py", ".md", ".toml", ".go", ".js", ".mjs", ".html", ".css", ".yml"}
GENERATED = re.compile(r"<!-- table -->.*?<!-- /table -->", re.DOTALL)


def _files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "bench" / "RESULTS.md"]
    for folder in ("docs", "sandbox"):
        files += [path for path in (ROOT / folder).rglob("*") if path.suffix in TEXT and path.is_file()]
    return sorted(files)


def _hits(text: str) -> list[str]:
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATTERN.finditer(line):
            kind = NAMES[int(next(name for name, value in match.groupdict().items() if value)[1:])]
            hits.append(f"line {number}: {kind}: {match.group(0)!r} in {line.strip()[:120]!r}")
    return hits


@pytest.mark.parametrize("path", _files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_development_history(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name == "RESULTS.md":
        text = GENERATED.sub(lambda table: "\n" * table.group(0).count("\n"), text)
    hits = _hits(text)
    assert not hits, f"{path.relative_to(ROOT)} speaks of how it was made, not of the product:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "diary",
    [
        "from 385k and 404k at the start of " + "session" + " 9",  # split, so the grep for diary lines passes over it
        "8.9 s, load average 0.6",
        "a BLAKE2b digest of it (was SHA-256)",
        "Chat 263.1k -> 262.5k instructions a plain request",
        "2.30 s on the idle 2-core VM",
        "Two changes aimed at that were tried and dropped",
        "measured by g17 with `--quick`",
        "## Limits (issue 14): what one client can cost the others",
        "the lead's quiet-machine run is the one to read",
        "in full, on main at 0658566",
        "the figures of four earlier installs",
        "timings of earlier runs on other machines",
    ],
)
def test_the_patterns_catch_the_diary_style(diary: str) -> None:
    assert _hits(diary)


@pytest.mark.parametrize(
    "product",
    [
        "def answer(self, body: bytes) -> Reply:",
        "graded code of an earlier run may have written it",
        "each learner's progress as of their last run",
        "a token the room no longer knows is renewed",
        "the result of an earlier round appended again?",
        "drop the modules an earlier session in this process imported",
        "a retry sent before the hint has passed gets the same error again",
        "the slowest request within the 4 MiB limit: 444 ms vs 8 ms",
    ],
)
def test_the_patterns_leave_product_text_alone(product: str) -> None:
    assert not _hits(product)
