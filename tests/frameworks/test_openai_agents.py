"""openai-agents' `Runner` with its Chat Completions, Responses (with and without
`auto_previous_response_id`, in an OpenAI conversation with `conversation_id`, and with an
`OpenAIConversationsSession`) and LiteLLM models (Anthropic and Gemini through litellm), streaming
and not, over `sandbox serve` and through `sandbox.mock()`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import BUDGET, LIMIT, SCENARIOS, THIRD_PARTY_WARNINGS, check

MODELS = [
    "chat",
    "responses",
    "responses-previous-id",
    "responses-conversation",
    "responses-session",
    "litellm-anthropic",
    "litellm-gemini",
]

pytestmark = THIRD_PARTY_WARNINGS


@contextlib.asynccontextmanager
async def _model(kind: str, name: str, base: str | None) -> AsyncIterator[Any]:
    if kind.startswith("litellm"):
        from agents.extensions.models.litellm_model import LitellmModel

        if kind == "litellm-anthropic":
            yield LitellmModel(f"anthropic/{name}", base_url=base, api_key="sk-ant-test")
        else:
            yield LitellmModel(f"gemini/{name}", base_url=f"{base}/v1beta" if base else None, api_key="gemini-test")
        return
    import openai
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel

    async with openai.AsyncOpenAI(api_key="sk-test", base_url=f"{base}/v1" if base else None) as client:
        if kind == "chat":
            yield OpenAIChatCompletionsModel(name, openai_client=client)
        else:
            yield OpenAIResponsesModel(name, openai_client=client)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("door", ["http", "mock"])
@pytest.mark.parametrize("kind", MODELS)
def test_openai_agents_runner(server: str, kind: str, door: str, stream: bool, name: str, run_async: Any) -> None:
    from agents import Agent, Runner, function_tool
    from agents.exceptions import MaxTurnsExceeded

    errors: tuple[type[BaseException], ...] = (MaxTurnsExceeded,)
    import anthropic
    import litellm
    import openai

    errors += (openai.BadRequestError, anthropic.BadRequestError, litellm.BadRequestError)

    async def main() -> str:
        async with _model(kind, name, server if door == "http" else None) as model:
            tools = [function_tool(function, strict_mode=False) for function in scenario_functions(name)]
            agent = Agent(name="assistant", model=model, tools=tools)
            prompt = sandbox.get_scenario(name).prompt
            options: dict[str, Any] = {"max_turns": LIMIT}
            if kind == "responses-previous-id":
                options["auto_previous_response_id"] = True
            if kind == "responses-conversation":  # the server holds the history: only new items are sent
                options["conversation_id"] = (await model._client.conversations.create()).id
            if kind == "responses-session":  # the history read from, and written to, a conversation
                from agents.memory import OpenAIConversationsSession

                options["session"] = OpenAIConversationsSession(openai_client=model._client)
            if stream:
                result = Runner.run_streamed(agent, prompt, **options)
                async for _ in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, prompt, **options)
            return str(result.final_output)

    async def mounted() -> str:
        with sandbox.mock(budget=BUDGET) if door == "mock" else contextlib.nullcontext():
            return await main()

    def run() -> str:
        return run_async(mounted())

    check(name, run, errors)
