"""LangGraph's `create_react_agent` over langchain-openai, langchain-anthropic and
langchain-google-genai chat models, streaming and not, over `sandbox serve` and through
`sandbox.mock()`."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import sandbox
from tests.frameworks._tools import scenario_functions
from tests.frameworks.conftest import BUDGET, LIMIT, SCENARIOS, THIRD_PARTY_WARNINGS, check

MODELS = ["openai", "anthropic", "google"]
_OUT_OF_STEPS = "Sorry, need more steps to process this request."
"""What create_react_agent answers, instead of raising, when the recursion limit is about to be hit."""

# create_react_agent still works in LangGraph 1.x and is what the users run; it warns that
# langchain.agents.create_agent replaces it.
pytestmark = [*THIRD_PARTY_WARNINGS, pytest.mark.filterwarnings("ignore:create_react_agent has been moved")]


def _chat_model(kind: str, name: str, base: str | None) -> Any:
    if kind == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=name, api_key="sk-test", base_url=f"{base}/v1" if base else None, max_retries=0)
    if kind == "anthropic":
        from langchain_anthropic import ChatAnthropic

        options = {"base_url": base} if base else {}
        return ChatAnthropic(model=name, api_key="sk-ant-test", max_retries=0, **options)
    from langchain_google_genai import ChatGoogleGenerativeAI

    options = {"base_url": base} if base else {}
    return ChatGoogleGenerativeAI(model=name, api_key="gemini-test", max_retries=0, **options)


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("door", ["http", "mock"])
@pytest.mark.parametrize("kind", MODELS)
def test_langgraph_react_agent(server: str, kind: str, door: str, stream: bool, name: str) -> None:
    import anthropic
    import openai
    from google.genai import errors as genai_errors
    from langchain_google_genai.chat_models import ChatGoogleGenerativeAIError
    from langgraph.errors import GraphRecursionError
    from langgraph.prebuilt import create_react_agent

    prompt = sandbox.get_scenario(name).prompt
    config = {"recursion_limit": 2 * LIMIT}

    def run() -> str:
        text = answer()
        if text == _OUT_OF_STEPS:
            raise RuntimeError(f"create_react_agent stopped at its own step limit: {text}")
        return text

    def answer() -> str:
        with sandbox.mock(budget=BUDGET) if door == "mock" else contextlib.nullcontext():
            model = _chat_model(kind, name, server if door == "http" else None)
            agent = create_react_agent(model, scenario_functions(name))
            inputs = {"messages": [("user", prompt)]}
            if not stream:
                return _text(agent.invoke(inputs, config)["messages"][-1])
            final: dict[str, Any] = {}
            for _mode, chunk in agent.stream(inputs, config, stream_mode=["messages", "values"]):
                if _mode == "values":
                    final = chunk
            return _text(final["messages"][-1])

    errors = (RuntimeError, GraphRecursionError, openai.BadRequestError, anthropic.BadRequestError)
    check(name, run, (*errors, genai_errors.ClientError, ChatGoogleGenerativeAIError))
