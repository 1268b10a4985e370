"""litellm as the client of a plain tool loop, on its OpenAI, Anthropic and Gemini providers,
streaming and not, over `sandbox serve` and through `sandbox.mock()`. litellm has no loop of its own:
the loop here is the lesson's, written the way litellm's docs write it."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import BUDGET, LIMIT, SCENARIOS, THIRD_PARTY_WARNINGS, check

PROVIDERS = {"openai": "/v1", "anthropic": "", "gemini": "/v1beta"}
"""litellm's provider prefix, and what its `api_base` adds to the server's address."""

pytestmark = THIRD_PARTY_WARNINGS


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("stream", [False, True], ids=["completion", "stream"])
@pytest.mark.parametrize("door", ["http", "mock"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_litellm_tool_loop(server: str, provider: str, door: str, stream: bool, name: str) -> None:
    import litellm

    scenario = sandbox.get_scenario(name)
    functions = {function.__name__: function for function in scenario_functions(name)}
    tools = [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
        }
        for tool in scenario.tools
    ]
    options: dict[str, Any] = {"api_key": "test-key", "tools": tools, "stream": stream, "num_retries": 0}
    if door == "http":
        options["api_base"] = server + PROVIDERS[provider]

    def run() -> str:
        messages: list[Any] = [{"role": "user", "content": scenario.prompt}]
        with sandbox.mock(budget=BUDGET) if door == "mock" else contextlib.nullcontext():
            for _ in range(LIMIT):
                response = litellm.completion(model=f"{provider}/{name}", messages=messages, **options)
                if stream:
                    response = litellm.stream_chunk_builder(list(response), messages=messages)
                message = response.choices[0].message
                if not message.tool_calls:
                    return str(message.content)
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    result = functions[call.function.name](**json.loads(call.function.arguments or "{}"))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise RuntimeError(f"the loop gave up after {LIMIT} rounds")

    check(name, run, (RuntimeError, litellm.BadRequestError))
