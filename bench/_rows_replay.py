"""Row: a replayed recording against the same scenario written by hand. `multi_step` is played once
through the in-process transport, its exchanges written as a scenario the way `sandbox record` writes
them (`sandbox.engine._recorded`), and the same 4-round tool loop then runs on the recorded scenario
and on the catalogue's `multi_step`: a recording is a scenario like any other, so it costs the same."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from _table import Row, Settings, compare, profile_of, timed_row

import sandbox
from sandbox import skyl
from sandbox.engine._recorded import Recording, scenarios_from

SCENARIO = "multi_step"


def _run(client: skyl.Client) -> skyl.Response:
    """The lesson's loop on `multi_step`'s prompt and tools, each call answered from its tool outputs."""
    written = sandbox.get_scenario(SCENARIO)
    req = skyl.Request(model=SCENARIO, messages=[skyl.user_text(written.prompt)], tools=list(written.tools))
    for _ in range(6):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            output = written.tool_outputs[repr(sandbox.Call(call.name, dict(call.arguments)))]
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise AssertionError("the loop did not finish")


def _loop(provider: str, scenario: sandbox.Scenario) -> Callable[[], object]:
    transport = sandbox.transport(scenario, budget=10**9)
    client = skyl.Client(provider, transport=transport)

    def tool_loop() -> object:
        resp = _run(client)
        assert len(transport.journal) == 4 and "confirmed, ref LB-2041" in resp.text()
        transport.journal.clear()
        return resp

    return tool_loop


def _recorded(provider: str) -> sandbox.Scenario:
    """`multi_step` as `sandbox record` would have written it from one run of the loop."""
    transport = sandbox.transport(SCENARIO)
    _run(skyl.Client(provider, transport=transport))
    recordings = [
        Recording(
            method=exchange.method,
            path=exchange.path,
            status=exchange.status,
            request_body=exchange.request_body,
            response_body=exchange.body,
            content_type=exchange.headers.get("content-type", ""),
        )
        for exchange in transport.journal
    ]
    [(_, text)] = scenarios_from(recordings, name="recorded", source="the bench")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recorded.toml"
        path.write_text(text, encoding="utf-8")
        return sandbox.load_scenario(path)


def row_replay(settings: Settings) -> list[Row]:
    rows = []
    for provider in sandbox.PROVIDERS:
        subjects = {
            "baseline": _loop(provider, sandbox.get_scenario(SCENARIO)),
            "recorded": _loop(provider, _recorded(provider)),
        }
        best = compare(subjects, settings, per_call_us=1500)
        name = f"replayed recording, 4-round loop, {provider}"
        baseline = "the same loop on the scenario written by hand"
        rows.append(timed_row(name, best, "recorded", baseline, 1.1, profile_of(subjects["recorded"], number=300)))
    return rows
