"""A framework's own loop recorded with `sandbox record`'s proxy and replayed on the recorded scenario:
pydantic-ai's `Agent`, unmodified, on each provider's model, streaming and not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import LIMIT, THIRD_PARTY_WARNINGS
from tests.loopback import recording

pytestmark = [*THIRD_PARTY_WARNINGS, pytest.mark.slow]

pytest.importorskip("pydantic_ai", reason="pydantic-ai 2.x needs Python 3.11 (pyproject's dev extra skips it on 3.10)")


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic", "google"])
def test_pydantic_ai_recorded_then_replayed(
    server: str, kind: str, stream: bool, tmp_path: Path, run_async: Any
) -> None:
    from pydantic_ai import Agent, UsageLimits

    from tests.frameworks.test_pydantic_ai import _model

    async def handle(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    def run(base: str) -> str:
        async def main() -> str:
            async with _model(kind, "multi_step", base) as model:
                agent = Agent(model, tools=scenario_functions("multi_step"), retries=0)
                result = await agent.run(
                    sandbox.get_scenario("multi_step").prompt,
                    usage_limits=UsageLimits(request_limit=LIMIT),
                    event_stream_handler=handle if stream else None,
                )
            return str(result.output)

        return run_async(main())

    with recording(server, tmp_path) as (proxy, _):
        recorded = run(proxy)
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    assert [call.name for step in scenario.steps for call in step.calls] == [
        "find_restaurant",
        "check_availability",
        "book_table",
    ]
    with sandbox.serving(scenario) as replay:
        assert run(replay.url) == recorded
        assert [exchange.status for exchange in replay.journal()] == [200, 200, 200, 200]
