"""What a challenge's README and hints tell a learner is true of skyl as it runs: the code they show
runs, and what they say a provider reports is what skyl reports."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

import pytest

import sandbox
from sandbox import skyl

CHALLENGES = Path(__file__).resolve().parents[2] / "challenges"


def _readme(folder: str) -> str:
    return (CHALLENGES / folder / "README.md").read_text(encoding="utf-8")


def _hints(name: str) -> list[str]:
    entries = tomllib.loads((CHALLENGES / "hints.toml").read_text(encoding="utf-8"))["challenge"]
    return [hint for entry in entries if entry["name"] == name for hint in entry["hints"]]


def test_05_readme_shows_how_to_build_a_response_by_hand() -> None:
    """Challenge 05 asks for a skyl.Response built by hand: its README shows the constructor and the
    Text part, in code that runs, and the turn it builds reads back as a real one does."""
    blocks = re.findall(r"```python\n(.*?)```", _readme("05_streaming"), re.DOTALL)
    assert blocks, "05's README has no python example"
    namespace: dict[str, object] = {}
    exec(blocks[0], namespace)
    resp = namespace["resp"]
    assert isinstance(resp, skyl.Response)
    assert [part.kind for part in resp.message.content] == ["text", "tool_call"]
    assert "skyl.Text(" in blocks[0] and "skyl.Response(" in blocks[0] and "skyl.Message(" in blocks[0]


def test_06_says_what_skyl_reports_for_gemini() -> None:
    """The lesson: a Gemini turn with a call reports StopToolUse, whatever its finishReason. skyl does so,
    and 06's README, hints and feedback say it the same way, never that the stop reason reads STOP."""
    scenario = sandbox.get_scenario("stop_reason_mismatch")
    client = skyl.Client("gemini", transport=sandbox.transport())
    resp = client.complete(skyl.Request(scenario.name, [skyl.user_text(scenario.prompt)], tools=scenario.tools))
    assert resp.tool_calls() and resp.raw["candidates"][0]["finishReason"] == "STOP"
    assert resp.stop_reason is skyl.StopReason.TOOL_USE
    from sandbox.grading.judge._lessons import END

    for text in [_readme("06_detect_the_end"), *_hints("06_detect_the_end"), END.rule, END.hint]:
        for sentence in re.split(r"(?<=[.:;])\s", " ".join(text.split())):
            if "Gemini" in sentence and "STOP" in sentence:
                assert "StopReason.TOOL_USE" in sentence, sentence


def test_the_readme_quotes_the_error_its_own_example_gets_with_assistant_text() -> None:
    """The README's loop, with skyl.assistant_text(resp.text()) in place of resp.message: the error it
    quotes is the one the sandbox gives, as Anthropic does."""
    readme = (CHALLENGES.parent / "README.md").read_text(encoding="utf-8")
    quoted = re.search(r"Anthropic refuses that before it looks at the results:\n\n```\n(.*?)\n```", readme)
    assert quoted, "the README no longer quotes the error of its assistant_text example"
    scenario = sandbox.get_scenario("parallel_calls")
    client = skyl.Client("anthropic", transport=sandbox.transport())
    req = skyl.Request("parallel_calls", [skyl.user_text(scenario.prompt)], tools=scenario.tools)
    resp = client.complete(req)
    req.messages.append(skyl.assistant_text(resp.text()))
    req.messages.extend(skyl.tool_result_message(call.id, "sunny") for call in resp.tool_calls())
    with pytest.raises(skyl.ProviderError) as raised:
        client.complete(req)
    assert str(raised.value) == quoted[1]
