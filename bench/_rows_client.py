"""Rows of a client's own speed, in one process: a round trip through the in-process transport against
a bare `httpx.MockTransport`, a whole tool loop against pydantic-ai's `TestModel`, and the official
openai SDK over the httpx2 door against the same SDK over a canned `httpx2.MockTransport`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
from _table import PROMPT, Row, Settings, compare, profile_of, timed_row

import sandbox
from sandbox import skyl

# -- row: in-process round trip ------------------------------------------------------------------


def second_request(provider: str) -> tuple[skyl.Client, sandbox.SandboxTransport, skyl.Request]:
    """A client over a fresh transport and the 2nd request of `single_call` (a call and its result in
    the history), so the engine's full validation and replay run, as on most requests of a loop."""
    transport = sandbox.transport(budget=10**9)  # the same body again and again is the point here
    client = skyl.Client(provider, transport=transport)
    scenario = sandbox.get_scenario("single_call")
    req = skyl.Request(model=scenario.name, messages=[skyl.user_text(PROMPT)], tools=list(scenario.tools))
    resp = client.complete(req)
    req.messages.append(resp.message)
    req.messages.extend(skyl.tool_result_message(call.id, "18C, clear") for call in resp.tool_calls())
    transport.journal.clear()
    return client, transport, req


def row_inproc(settings: Settings) -> list[Row]:
    rows = []
    for provider in sandbox.PROVIDERS:
        client, transport, req = second_request(provider)
        url, body, headers = client._prepare(req, stream=False)
        canned = transport.engine.handle("POST", httpx.URL(url).path, body)
        assert canned.status == 200, canned.body
        payload = json.loads(body)
        mock = httpx.MockTransport(
            lambda request, canned=canned: httpx.Response(200, headers=canned.headers, content=canned.body)
        )
        bare = httpx.Client(transport=mock)

        def baseline(
            bare: httpx.Client = bare, url: str = url, payload: Any = payload, headers: Any = headers
        ) -> object:
            return bare.post(url, json=payload, headers=headers).json()

        def subject(client: skyl.Client = client, req: skyl.Request = req, journal: Any = transport.journal) -> object:
            response = client.complete(req)
            journal.clear()
            return response

        best = compare({"baseline": baseline, "subject": subject}, settings, per_call_us=150)
        name, canned = f"in-process round trip, {provider}", "bare httpx + MockTransport, canned body"
        rows.append(timed_row(name, best, "subject", canned, 2.5, profile_of(subject)))
    return rows


# -- row: a complete tool loop against pydantic-ai's TestModel -----------------------------------


def row_loop(settings: Settings) -> list[Row]:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.test import TestModel
    except ImportError as exc:
        return [Row("2-round tool loop", None, "pydantic-ai TestModel", "<= 0.1x", None, f"n/a: {exc}")]
    scenario = sandbox.get_scenario("single_call")

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return "18C, clear"

    agent = Agent(TestModel(), tools=[get_weather])
    loop = asyncio.new_event_loop()
    first = loop.run_until_complete(agent.run(PROMPT))
    assert len(first.all_messages()) == 4, "TestModel runs request, tool call, tool return, answer"

    def baseline() -> object:
        return loop.run_until_complete(agent.run(PROMPT))

    subjects: dict[str, Callable[[], object]] = {"baseline": baseline}
    for provider in sandbox.PROVIDERS:
        transport = sandbox.transport(budget=10**9)
        client = skyl.Client(provider, transport=transport)

        def tool_loop(client: skyl.Client = client, journal: Any = transport.journal) -> object:
            req = skyl.Request(model=scenario.name, messages=[skyl.user_text(PROMPT)], tools=list(scenario.tools))
            for _ in range(5):
                resp = client.complete(req)
                calls = resp.tool_calls()
                if not calls:
                    break
                req.messages.append(resp.message)
                for call in calls:
                    req.messages.append(skyl.tool_result_message(call.id, get_weather(**call.arguments)))
            assert len(journal) == 2 and "18C, clear" in resp.text()
            journal.clear()
            return resp

        subjects[provider] = tool_loop
    best = compare(subjects, settings, per_call_us=600)
    loop.close()
    rows = []
    for provider in sandbox.PROVIDERS:
        profile = profile_of(subjects[provider], number=1000)
        name = f"2-round tool loop, {provider}"
        rows.append(timed_row(name, best, provider, "pydantic-ai TestModel, same loop", 0.1, profile, "(10x faster)"))
    return rows


# -- row: the official openai SDK over the httpx2 door -------------------------------------------


def _sdk_second_request(api: str, sdk: Any) -> Callable[[Any], object]:
    """Run the first round on `sdk` (over the sandbox) and return a function that sends the second
    round's request (the call and its result in the history) on any SDK client."""
    scenario = sandbox.get_scenario("single_call")
    tool = scenario.tools[0]
    if api == "chat.completions":
        function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        tools: Any = [{"type": "function", "function": function}]
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        message = sdk.chat.completions.create(model=scenario.name, messages=messages, tools=tools).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": call.id, "content": "18C, clear"} for call in message.tool_calls]
        return lambda client: client.chat.completions.create(model=scenario.name, messages=messages, tools=tools)
    tools = [{"type": "function", "strict": False, **function_of(tool)}]
    items: list[Any] = [{"role": "user", "content": PROMPT}]
    response = sdk.responses.create(model=scenario.name, input=items, tools=tools)
    items += [item.model_dump(exclude_none=True) for item in response.output]
    items += [
        {"type": "function_call_output", "call_id": item.call_id, "output": "18C, clear"}
        for item in response.output
        if item.type == "function_call"
    ]
    return lambda client: client.responses.create(model=scenario.name, input=items, tools=tools)


def function_of(tool: skyl.Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def row_sdk(settings: Settings) -> list[Row]:
    try:
        import httpx2
        import openai
    except ImportError as exc:
        return [Row("openai SDK over httpx2_transport", None, "", "<= 1.2x", None, f"n/a: {exc}")]
    rows = []
    for api in ("chat.completions", "responses"):
        door = sandbox.httpx2_transport(budget=10**9)
        sdk = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=door))  # type: ignore[arg-type]
        send = _sdk_second_request(api, sdk)
        send(sdk)
        answer = door.journal.last
        assert answer is not None and answer.status == 200, answer and answer.body
        door.journal.clear()
        mock = httpx2.MockTransport(lambda request, a=answer: httpx2.Response(200, headers=a.headers, content=a.body))
        canned = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=mock))

        def baseline(send: Callable[[Any], object] = send, canned: Any = canned) -> object:
            return send(canned)

        def subject(send: Callable[[Any], object] = send, sdk: Any = sdk, journal: Any = door.journal) -> object:
            result = send(sdk)
            journal.clear()
            return result

        best = compare({"baseline": baseline, "subject": subject}, settings, per_call_us=500)
        name = f"openai SDK {api}.create over httpx2_transport"
        baseline_text = "same SDK over httpx2.MockTransport, canned body"
        rows.append(timed_row(name, best, "subject", baseline_text, 1.2, profile_of(subject, number=1000)))
    return rows
