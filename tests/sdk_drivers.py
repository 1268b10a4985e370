"""Tool loops written the way each official SDK's users write them: the independent judge of our shapes.

Each driver takes SDK client options (a base_url for server mode, an http_client for in-process) and
runs one scenario to its answer, answering every call from the scenario's tool outputs.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

import sandbox

SDK_PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")


def in_process_options(driver: str, transport: sandbox.Httpx2Transport) -> dict[str, Any]:
    """The client option that routes a driver's SDK through `transport` (google-genai names it apart)."""
    http_client = httpx2.Client(transport=transport)  # type: ignore[arg-type]
    return {"httpx_client": http_client} if driver.startswith("gemini") else {"http_client": http_client}


def server_options(driver: str, base: str) -> dict[str, Any]:
    """The base URL each SDK takes for a sandbox served at `base`: OpenAI's includes `/v1`."""
    return {"base_url": f"{base}/v1"} if driver.startswith("openai") else {"base_url": base}


def _scenario(scenario: str | sandbox.Scenario) -> sandbox.Scenario:
    """A catalogue scenario by name, or the scenario itself (its prompt, tools and tool outputs)."""
    return scenario if isinstance(scenario, sandbox.Scenario) else sandbox.get_scenario(scenario)


def _output(scenario: sandbox.Scenario, name: str, arguments: Any) -> str:
    return scenario.tool_outputs[repr(sandbox.Call(name, dict(arguments or {})))]


def openai_chat(
    scenario_name: str | sandbox.Scenario, *, stream: bool = False, client: Any = None, **options: Any
) -> str:
    import openai

    scenario = _scenario(scenario_name)
    client = client or openai.OpenAI(api_key="sk-test", **{"max_retries": 0, **options})
    with client:  # closes its connections: a server test must not leave sockets to the GC
        tools: Any = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in scenario.tools
        ]
        messages: list[Any] = [{"role": "user", "content": scenario.prompt}]
        for _ in range(10):
            if stream:
                with client.chat.completions.stream(model=scenario.name, messages=messages, tools=tools) as events:
                    for _event in events:
                        pass
                    message = events.get_final_completion().choices[0].message
            else:
                message = (
                    client.chat.completions.create(model=scenario.name, messages=messages, tools=tools)
                    .choices[0]
                    .message
                )
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": _output(scenario, call.function.name, arguments),
                    }
                )
        raise AssertionError("the openai chat loop did not finish")


def openai_responses(
    scenario_name: str | sandbox.Scenario, *, stream: bool = False, client: Any = None, **options: Any
) -> str:
    import openai

    scenario = _scenario(scenario_name)
    client = client or openai.OpenAI(api_key="sk-test", **{"max_retries": 0, **options})
    with client:  # closes its connections: a server test must not leave sockets to the GC
        tools: Any = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in scenario.tools
        ]
        items: list[Any] = [{"role": "user", "content": scenario.prompt}]
        for _ in range(10):
            if stream:
                with client.responses.stream(model=scenario.name, input=items, tools=tools) as events:
                    for _event in events:
                        pass
                    response = events.get_final_response()
            else:
                response = client.responses.create(model=scenario.name, input=items, tools=tools)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return response.output_text
            items.extend(item.model_dump(exclude_none=True) for item in response.output)
            for call in calls:
                output = _output(scenario, call.name, json.loads(call.arguments))
                items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
        raise AssertionError("the openai responses loop did not finish")


def openai_responses_kept(scenario_name: str, *, client: Any = None, **options: Any) -> str:
    """The Responses loop that leaves its history on the server: after the prompt, each turn sends
    only the tool outputs and `previous_response_id`."""
    import openai

    scenario = sandbox.get_scenario(scenario_name)
    client = client or openai.OpenAI(api_key="sk-test", **{"max_retries": 0, **options})
    with client:
        tools: Any = [
            {"type": "function", "name": t.name, "parameters": t.parameters, "strict": False} for t in scenario.tools
        ]
        response = client.responses.create(model=scenario.name, input=scenario.prompt, tools=tools)
        for _ in range(10):
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return response.output_text
            outputs: Any = [
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": _output(scenario, call.name, json.loads(call.arguments)),
                }
                for call in calls
            ]
            response = client.responses.create(
                model=scenario.name, previous_response_id=response.id, input=outputs, tools=tools
            )
        raise AssertionError("the openai responses loop did not finish")


def anthropic_messages(
    scenario_name: str | sandbox.Scenario, *, stream: bool = False, client: Any = None, **options: Any
) -> str:
    import anthropic

    scenario = _scenario(scenario_name)
    client = client or anthropic.Anthropic(api_key="sk-ant-test", **{"max_retries": 0, **options})
    with client:  # closes its connections: a server test must not leave sockets to the GC
        tools: Any = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in scenario.tools
        ]
        messages: list[Any] = [{"role": "user", "content": scenario.prompt}]
        for _ in range(10):
            if stream:
                with client.messages.stream(
                    model=scenario.name, max_tokens=1024, messages=messages, tools=tools
                ) as events:
                    for _event in events:
                        pass
                    message = events.get_final_message()
            else:
                message = client.messages.create(model=scenario.name, max_tokens=1024, messages=messages, tools=tools)
            calls = [block for block in message.content if block.type == "tool_use"]
            if not calls:
                return "".join(block.text for block in message.content if block.type == "text")
            messages.append({"role": "assistant", "content": message.content})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call.id,
                            "content": _output(scenario, call.name, call.input),
                        }
                        for call in calls
                    ],
                }
            )
        raise AssertionError("the anthropic loop did not finish")


def gemini(scenario_name: str | sandbox.Scenario, *, stream: bool = False, client: Any = None, **options: Any) -> str:
    from google import genai
    from google.genai import types

    scenario = _scenario(scenario_name)
    client = client or genai.Client(api_key="test-key", http_options=types.HttpOptions(**options))
    with client:  # closes its connections: a server test must not leave sockets to the GC
        declarations = [
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=dict(t.parameters))
            for t in scenario.tools
        ]
        config = types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=declarations)] if declarations else None,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=scenario.prompt)])]
        for _ in range(10):
            if stream:
                parts: list[Any] = []
                for chunk in client.models.generate_content_stream(
                    model=scenario.name, contents=contents, config=config
                ):
                    if chunk.candidates and chunk.candidates[0].content and chunk.candidates[0].content.parts:
                        parts.extend(chunk.candidates[0].content.parts)
                content = types.Content(role="model", parts=parts)
            else:
                response = client.models.generate_content(model=scenario.name, contents=contents, config=config)
                assert response.candidates and response.candidates[0].content
                content = response.candidates[0].content
            calls = [part.function_call for part in content.parts or [] if part.function_call]
            if not calls:
                return "".join(part.text or "" for part in content.parts or [])
            contents.append(content)
            contents.append(
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(
                            name=call.name or "", response={"result": _output(scenario, call.name or "", call.args)}
                        )
                        for call in calls
                    ],
                )
            )
        raise AssertionError("the gemini loop did not finish")


DRIVERS = {
    "openai": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
}


# -- reasoning models: each SDK's own way of keeping the whole turn --------------------------------------
# Each returns the answer and, per model turn, whether it carried reasoning. `drop_reasoning` sends the
# first turn back rebuilt from its calls, the mistake each provider refuses.


def openai_responses_reasoning(
    scenario_name: str, *, stream: bool = False, drop_reasoning: bool = False, **options: Any
) -> tuple[str, list[bool]]:
    import openai

    scenario = sandbox.get_scenario(scenario_name)
    client = openai.OpenAI(api_key="sk-test", **{"max_retries": 0, **options})
    with client:
        tools: Any = [
            {"type": "function", "name": t.name, "parameters": t.parameters, "strict": False} for t in scenario.tools
        ]
        items: list[Any] = [{"role": "user", "content": scenario.prompt}]
        seen = []
        for _ in range(10):
            asked: Any = {"model": scenario.name, "input": items, "tools": tools, "reasoning": {"summary": "auto"}}
            if stream:
                with client.responses.stream(**asked) as events:
                    for _event in events:
                        pass
                    response = events.get_final_response()
            else:
                response = client.responses.create(**asked)
            seen.append(any(item.type == "reasoning" for item in response.output))
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return response.output_text, seen
            items += calls if drop_reasoning else response.output  # the docs' `input += response.output`
            for call in calls:
                output = _output(scenario, call.name, json.loads(call.arguments))
                items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
        raise AssertionError("the openai responses loop did not finish")


def anthropic_thinking(
    scenario_name: str, *, stream: bool = False, drop_reasoning: bool = False, **options: Any
) -> tuple[str, list[bool]]:
    import anthropic

    scenario = sandbox.get_scenario(scenario_name)
    client = anthropic.Anthropic(api_key="sk-ant-test", **{"max_retries": 0, **options})
    with client:
        tools: Any = [{"name": t.name, "input_schema": t.parameters} for t in scenario.tools]
        messages: list[Any] = [{"role": "user", "content": scenario.prompt}]
        seen = []
        for _ in range(10):
            asked: Any = {
                "model": scenario.name,
                "max_tokens": 2048,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "messages": messages,
                "tools": tools,
            }
            if stream:
                with client.messages.stream(**asked) as events:
                    for _event in events:
                        pass
                    message = events.get_final_message()
            else:
                message = client.messages.create(**asked)
            seen.append(message.content[0].type in ("thinking", "redacted_thinking"))
            calls = [block for block in message.content if block.type == "tool_use"]
            if not calls:
                return "".join(block.text for block in message.content if block.type == "text"), seen
            messages.append({"role": "assistant", "content": calls if drop_reasoning else message.content})
            results = [
                {"type": "tool_result", "tool_use_id": call.id, "content": _output(scenario, call.name, call.input)}
                for call in calls
            ]
            messages.append({"role": "user", "content": results})
        raise AssertionError("the anthropic loop did not finish")


def gemini_thinking(
    scenario_name: str, *, stream: bool = False, drop_reasoning: bool = False, **options: Any
) -> tuple[str, list[bool]]:
    from google import genai
    from google.genai import types

    scenario = sandbox.get_scenario(scenario_name)
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(**options))
    with client:
        config = _gemini_config(scenario)
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=scenario.prompt)])]
        seen = []
        for _ in range(10):
            if stream:
                parts: list[Any] = []
                for chunk in client.models.generate_content_stream(
                    model=scenario.name, contents=contents, config=config
                ):
                    if chunk.candidates and chunk.candidates[0].content and chunk.candidates[0].content.parts:
                        parts.extend(chunk.candidates[0].content.parts)
                # Gemini 3 ends a call turn with a chunk holding only an empty text part: not part of the turn.
                content = types.Content(role="model", parts=[part for part in parts if part.text != ""])
            else:
                response = client.models.generate_content(model=scenario.name, contents=contents, config=config)
                assert response.candidates and response.candidates[0].content
                content = response.candidates[0].content
            seen.append(any(part.thought_signature for part in content.parts or []))
            calls = [part.function_call for part in content.parts or [] if part.function_call]
            if not calls:
                return "".join(part.text or "" for part in content.parts or []), seen
            rebuilt = types.Content(role="model", parts=[types.Part(function_call=call) for call in calls])
            contents.append(rebuilt if drop_reasoning else content)
            contents.append(types.Content(role="user", parts=_gemini_results(scenario, calls)))
        raise AssertionError("the gemini loop did not finish")


def gemini_chat(scenario_name: str, *, stream: bool = False, **options: Any) -> tuple[str, list[bool]]:
    """google-genai's chat session: it keeps each model turn, thought signatures included, by itself.

    Streamed, the session records every chunk as its own model turn, the trailing empty-text chunk of
    a Gemini 3 call turn included, which the sandbox refuses like any unset part: only `send_message`
    is driven here."""
    if stream:
        raise NotImplementedError("google-genai's streaming chat is not driven (see the docstring)")
    from google import genai
    from google.genai import types

    scenario = sandbox.get_scenario(scenario_name)
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(**options))
    with client:
        chat = client.chats.create(model=scenario.name, config=_gemini_config(scenario))
        message: Any = scenario.prompt
        seen = []
        for _ in range(10):
            response = chat.send_message(message)
            assert response.candidates and response.candidates[0].content
            parts = list(response.candidates[0].content.parts or [])
            seen.append(any(part.thought_signature for part in parts))
            calls = [part.function_call for part in parts if part.function_call]
            if not calls:
                return "".join(part.text or "" for part in parts), seen
            message = _gemini_results(scenario, calls)
        raise AssertionError("the gemini chat did not finish")


def _gemini_config(scenario: sandbox.Scenario) -> Any:
    from google.genai import types

    declarations = [
        types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=dict(t.parameters))
        for t in scenario.tools
    ]
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _gemini_results(scenario: sandbox.Scenario, calls: list[Any]) -> list[Any]:
    from google.genai import types

    return [
        types.Part.from_function_response(
            name=call.name or "", response={"result": _output(scenario, call.name or "", call.args)}
        )
        for call in calls
    ]


REASONING_DRIVERS = {
    "openai-responses": openai_responses_reasoning,
    "anthropic": anthropic_thinking,
    "gemini": gemini_thinking,
    "gemini-chat": gemini_chat,
}
