"""The official SDKs' own tool loops, with their default settings: the anthropic SDK's beta tool
runner (message threads on), the openai SDK's Responses tool runner, google-genai's automatic
function calling; streaming and not, over `sandbox serve` and through `sandbox.mock()`."""

from __future__ import annotations

from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import BUDGET, LIMIT, SCENARIOS, THIRD_PARTY_WARNINGS, check

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
DOOR = pytest.mark.parametrize("door", ["http", "mock"])
SCENARIO = pytest.mark.parametrize("name", SCENARIOS)
pytestmark = THIRD_PARTY_WARNINGS


def _mounted(door: str) -> Any:
    import contextlib

    return sandbox.mock(budget=BUDGET) if door == "mock" else contextlib.nullcontext()


@SCENARIO
@STREAM
@DOOR
def test_anthropic_tool_runner(server: str, door: str, stream: bool, name: str) -> None:
    import anthropic
    from anthropic import beta_tool

    scenario = sandbox.get_scenario(name)

    def run() -> str:
        with _mounted(door):
            base = {"base_url": server} if door == "http" else {}
            with anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, **base) as client:
                runner = client.beta.messages.tool_runner(
                    model=name,
                    max_tokens=1024,
                    max_iterations=LIMIT,
                    tools=[beta_tool(function) for function in scenario_functions(name)],
                    messages=[{"role": "user", "content": scenario.prompt}],
                    stream=stream,
                )
                message = runner.until_done()
        if message.stop_reason == "tool_use":
            raise RuntimeError("the tool runner stopped at max_iterations")
        return "".join(block.text for block in message.content if block.type == "text")

    check(name, run, (RuntimeError, anthropic.BadRequestError))


@SCENARIO
@STREAM
@DOOR
def test_openai_responses_tool_runner(server: str, door: str, stream: bool, name: str) -> None:
    import openai
    from openai.lib.responses_tool_runner import RegisteredFunction, ResponsesToolRunner, ToolRunnerError

    scenario = sandbox.get_scenario(name)
    functions = {function.__name__: function for function in scenario_functions(name)}
    registered = [
        RegisteredFunction(
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                "strict": False,
            },
            lambda arguments, function=functions[tool.name]: function(**arguments),
        )
        for tool in scenario.tools
    ]

    def run() -> str:
        with _mounted(door):
            base = {"base_url": f"{server}/v1"} if door == "http" else {}
            with openai.OpenAI(api_key="sk-test", max_retries=0, **base) as client:
                runner = ResponsesToolRunner(functions=registered)
                response = runner.run(client, {"model": name, "input": scenario.prompt}, max_steps=LIMIT, stream=stream)
        return response.output_text

    check(name, run, (ToolRunnerError, openai.BadRequestError))


@SCENARIO
@STREAM
@DOOR
def test_google_genai_automatic_function_calling(server: str, door: str, stream: bool, name: str) -> None:
    from google import genai
    from google.genai import errors, types

    scenario = sandbox.get_scenario(name)
    calls: list[str] = []

    def run() -> str:
        config = types.GenerateContentConfig(
            tools=scenario_functions(name, calls),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(maximum_remote_calls=LIMIT),
        )
        with _mounted(door):
            options = types.HttpOptions(base_url=server) if door == "http" else None
            client = genai.Client(api_key="gemini-test", http_options=options)
            with client:
                if stream:
                    text = ""
                    for last in client.models.generate_content_stream(
                        model=name, contents=scenario.prompt, config=config
                    ):
                        # The stream runs on through every round: the answer is the last round's text.
                        text = "" if last.function_calls else text + (last.text or "")
                else:
                    last = client.models.generate_content(model=name, contents=scenario.prompt, config=config)
                    text = last.text or ""
        if last.function_calls:
            raise RuntimeError(f"automatic function calling stopped at its limit after {len(calls)} calls")
        return text

    check(name, run, (RuntimeError, errors.ClientError))
