"""The engineer's docs (docs/engineer/*.md): every Python example is a test module, and each passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow

DOCS = Path(__file__).resolve().parents[2] / "docs" / "engineer"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXAMPLES = [
    (page, index, code)
    for page in sorted(DOCS.glob("*.md"))
    for index, code in enumerate(BLOCK.findall(page.read_text()))
]


def test_every_page_has_examples() -> None:
    assert {page.name for page, _, _ in EXAMPLES} == {page.name for page in DOCS.glob("*.md")}


@pytest.mark.parametrize(
    ("page", "index", "code"), EXAMPLES, ids=[f"{page.stem}-{index}" for page, index, _ in EXAMPLES]
)
def test_example_passes(pytester: pytest.Pytester, page: Path, index: int, code: str) -> None:
    pytester.makepyfile(**{f"test_{page.stem}_{index}": code})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(re.findall(r"^def test_", code, re.MULTILINE)))
