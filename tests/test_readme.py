"""The README's examples run as written: a newcomer's first copy-paste must work."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str) -> str:
    section = README.split(heading, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def test_readme_tool_loop_runs_and_prints_the_answer() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_block_after("## A tool loop against the sandbox"), {})
    assert out.getvalue().strip() == "Paris: sunny in Paris. Tokyo: sunny in Tokyo, local time 21:30."


def test_readme_custom_scenario_runs() -> None:
    namespace: dict[str, object] = {}
    exec("import sandbox\nfrom sandbox import skyl\n" + _block_after("Write your own as TOML"), namespace)
    client = namespace["client"]
    from sandbox import skyl

    assert isinstance(client, skyl.Client)
    req = skyl.Request(model="x", messages=[skyl.user_text("define loop")], tools=namespace["lookup"].tools)  # type: ignore[attr-defined]
    resp = client.complete(req)
    assert [call.name for call in resp.tool_calls()] == ["define"]


def test_readme_fault_example_prints_the_rate_limit_then_the_answer() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_block_after("### Faults: the provider failing on purpose"), {})
    assert out.getvalue().splitlines() == ["429 rate_limit_error 0.02", "Hello! No tools needed for that."]
