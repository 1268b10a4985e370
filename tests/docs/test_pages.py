"""Every `python` example in docs/ runs as written, and prints what its comments say.

The blocks of one page run in order in one namespace, as a reader would paste them. A block fenced
as `py` is a fragment (a signature, a snippet with `...`) and is only shown.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "```python\n" in path.read_text(encoding="utf-8"))

EXPECTED = {
    "learn/getting-started.md": ["Paris: sunny in Paris. Tokyo: sunny in Tokyo, local time 21:30."],
    "agents/faults.md": ["429 rate_limit_error 0.02", "Hello! No tools needed for that."],
    "agents/mounting.md": ["Hello! No tools needed for that.", "Hello! No tools needed for that."],
    "agents/journal.md": ["2 [200, 200]", "openai single_call 1", "tool", "[]"],
}
"""What each page prints, line by line; a page not named here must print nothing."""


def _blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def test_the_pages_with_examples_are_found() -> None:
    names = {str(page.relative_to(DOCS)) for page in PAGES}
    assert set(EXPECTED) <= names, sorted(names)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_every_python_example_runs(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": "docs_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in _blocks(page):
            exec(compile(block, str(page), "exec"), namespace)
    assert out.getvalue().splitlines() == EXPECTED.get(str(page.relative_to(DOCS)), [])
