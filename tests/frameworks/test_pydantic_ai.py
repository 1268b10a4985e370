"""pydantic-ai's `Agent` on its OpenAI Chat, OpenAI Responses, Anthropic and Google models, streaming
and not, over `sandbox serve` and through `sandbox.mock()`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import BUDGET, LIMIT, SCENARIOS, THIRD_PARTY_WARNINGS, check

MODELS = ["openai-chat", "openai-responses", "anthropic", "google"]

pytestmark = THIRD_PARTY_WARNINGS

pytest.importorskip("pydantic_ai", reason="pydantic-ai 2.x needs Python 3.11 (pyproject's dev extra skips it on 3.10)")


@contextlib.asynccontextmanager
async def _model(kind: str, name: str, base: str | None) -> AsyncIterator[Any]:
    """The model on an SDK client of our own, closed when the run ends: a provider's cached client
    would leave its sockets open past the event loop."""
    if kind.startswith("openai"):
        import openai
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        async with openai.AsyncOpenAI(api_key="sk-test", base_url=f"{base}/v1" if base else None) as client:
            model_class = OpenAIChatModel if kind == "openai-chat" else OpenAIResponsesModel
            yield model_class(name, provider=OpenAIProvider(openai_client=client))
    elif kind == "anthropic":
        import anthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        async with anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=base) as client:
            yield AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client))
    else:
        import httpx2
        from google import genai
        from google.genai import types
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        # Async google-genai sends through aiohttp when it is installed, which mock() cannot see; an
        # httpx2 client of its own (a documented option) is what mock() intercepts.
        async with httpx2.AsyncClient() as http:
            options = types.HttpOptions(base_url=base) if base else types.HttpOptions(httpx_async_client=http)
            client = genai.Client(api_key="gemini-test", http_options=options)
            try:
                yield GoogleModel(name, provider=GoogleProvider(client=client))
            finally:
                await client.aio.aclose()
                client.close()


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("door", ["http", "mock"])
@pytest.mark.parametrize("kind", MODELS)
def test_pydantic_ai_agent(server: str, kind: str, door: str, stream: bool, name: str, run_async: Any) -> None:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.exceptions import ModelHTTPError, UsageLimitExceeded

    async def handle(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    async def main() -> str:
        async with _model(kind, name, server if door == "http" else None) as model:
            agent = Agent(model, tools=scenario_functions(name), retries=0)
            result = await agent.run(
                sandbox.get_scenario(name).prompt,
                usage_limits=UsageLimits(request_limit=LIMIT),
                event_stream_handler=handle if stream else None,
            )
        return str(result.output)

    async def mounted() -> str:
        with sandbox.mock(budget=BUDGET) if door == "mock" else contextlib.nullcontext():
            return await main()

    def run() -> str:
        return run_async(mounted())

    check(name, run, (UsageLimitExceeded, ModelHTTPError))
