"""pydantic-ai against the engineer's scripting: steps chosen by content, a function scenario,
native structured output and embeddings, on each provider's model, through `sandbox.mock()`."""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from pydantic import BaseModel

import sandbox
from sandbox import Call, Scenario, Step, When
from sandbox.skyl import Tool
from tests.frameworks.conftest import THIRD_PARTY_WARNINGS

pytestmark = THIRD_PARTY_WARNINGS

pytest.importorskip("pydantic_ai", reason="pydantic-ai 2.x needs Python 3.11 (pyproject's dev extra skips it on 3.10)")

from tests.frameworks.test_pydantic_ai import _model  # noqa: E402 - after the skip, as it imports pydantic-ai

MODELS = {
    "openai-chat": "gpt-4o",
    "openai-responses": "gpt-4o",
    "anthropic": "claude-sonnet-5-5",
    "google": "gemini-3.5-flash-lite",
}
ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
SUPPORT = Scenario(
    "support",
    tools=[Tool("lookup_order", "Look up an order.", ORDER), Tool("cancel_subscription", "Cancel the subscription.")],
    steps=[
        Step(when=When(user="order"), calls=[Call("lookup_order", {"order_id": "ord_1042"})]),
        Step(text="Your order: {last[0]}."),
        Step(when=When(user=re.compile(r"\bcancel\b", re.IGNORECASE)), calls=[Call("cancel_subscription")]),
        Step(text="Done: {last[0]}."),
    ],
)


def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"{order_id}: shipped"


def cancel_subscription() -> str:
    """Cancel the subscription."""
    return "subscription sub_7 cancelled"


def _run(run_async: Callable[[Coroutine[Any, Any, Any]], Any], kind: str, scenario: Scenario, **agent: Any) -> Any:
    from pydantic_ai import Agent

    async def main() -> tuple[Any, sandbox.Journal]:
        with sandbox.mock(scenario, strict=True) as mounted:
            async with _model(kind, MODELS[kind], None) as model:
                result = await Agent(model, retries=0, **agent).run("Cancel my subscription, please.")
        return result.output, mounted.journal

    return run_async(main())


@pytest.mark.parametrize("kind", MODELS)
def test_an_agent_gets_the_step_its_user_message_asks_for(kind: str, run_async: Any) -> None:
    output, journal = _run(run_async, kind, SUPPORT, tools=[lookup_order, cancel_subscription])
    assert output == "Done: subscription sub_7 cancelled."
    assert [call.name for call in journal.calls()] == ["cancel_subscription"]


def respond(conversation: sandbox.Conversation) -> Step | str:
    """The FunctionModel shape: cancel when asked to, then confirm with the tool's result."""
    last = conversation.messages[-1]
    if last.role == "tool":
        return f"Confirmed: {last.tool_results()[0].content}."
    return Step(calls=[Call("cancel_subscription")])


@pytest.mark.parametrize("kind", MODELS)
def test_an_agent_on_a_function_scenario(kind: str, run_async: Any) -> None:
    scenario = Scenario("desk", respond=respond, tools=SUPPORT.tools)
    output, journal = _run(run_async, kind, scenario, tools=[lookup_order, cancel_subscription])
    assert output == "Confirmed: subscription sub_7 cancelled."
    assert [exchange.step for exchange in journal] == [0, 1]


class Cancellation(BaseModel):
    subscription: str
    refunded: bool


@pytest.mark.parametrize("kind", MODELS)
def test_an_agent_gets_native_structured_output(kind: str, run_async: Any) -> None:
    from pydantic_ai import NativeOutput

    scenario = Scenario("desk", steps=[Step(output={"subscription": "sub_7", "refunded": False})])
    output, journal = _run(run_async, kind, scenario, output_type=NativeOutput(Cancellation))
    assert output == Cancellation(subscription="sub_7", refunded=False)
    assert journal.last.status == 200


@pytest.mark.parametrize(
    ("kind", "model", "size"), [("openai", "text-embedding-3-small", 1536), ("google", "gemini-embedding-001", 3072)]
)
def test_an_embedder_gets_deterministic_vectors(kind: str, model: str, size: int, run_async: Any) -> None:
    from pydantic_ai import Embedder

    async def main() -> tuple[list[Any], list[Any]]:
        with sandbox.mock(strict=True):
            async with _embedding_model(kind, model) as embedding_model:
                embedder = Embedder(embedding_model)
                documents = await embedder.embed_documents(["refund policy", "shipping times"])
                query = await embedder.embed_query("refund policy")
        return list(documents.embeddings), list(query.embeddings)

    documents, query = run_async(main())
    assert [len(vector) for vector in documents] == [size, size]
    assert list(query[0]) == pytest.approx(list(documents[0]), abs=1e-6)


def _embedding_model(kind: str, model: str) -> Any:
    import contextlib

    @contextlib.asynccontextmanager
    async def made() -> Any:
        if kind == "openai":
            import openai
            from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
            from pydantic_ai.providers.openai import OpenAIProvider

            async with openai.AsyncOpenAI(api_key="sk-test") as client:
                yield OpenAIEmbeddingModel(model, provider=OpenAIProvider(openai_client=client))
        else:
            import httpx2
            from google import genai
            from google.genai import types
            from pydantic_ai.embeddings.google import GoogleEmbeddingModel
            from pydantic_ai.providers.google import GoogleProvider

            async with httpx2.AsyncClient() as http:
                client = genai.Client(api_key="gemini-test", http_options=types.HttpOptions(httpx_async_client=http))
                try:
                    yield GoogleEmbeddingModel(model, provider=GoogleProvider(client=client))
                finally:
                    await client.aio.aclose()
                    client.close()

    return made()
