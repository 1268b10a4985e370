"""The errors the engine words itself, beyond the wire formats' own: an unknown scenario, an undeclared
tool, a spent budget, an oversized body, an unknown `alt=`, and an internal failure.

May touch: only what it is handed (the wire format whose envelope the error goes in, the scenario and
figures it names); it keeps no state. Each error says what happened and what to do, as every
`sandbox:` error does.
"""

from __future__ import annotations

import operator
import urllib.parse

from ..wire import Conversation, ErrorResponse, Rule, WireFormat
from ._scenario import Scenario, Step

__all__ = [
    "budget_error",
    "check_tools",
    "gemini_alt",
    "internal",
    "missing_tools",
    "model_not_found",
    "printable",
    "store_unavailable",
    "too_large",
    "undeclared",
    "unknown_scenario",
]


def printable(text: str) -> str:
    """`text` with any lone surrogate (what a JSON `\\ud800` escape decodes to) written as an escape:
    error bodies are UTF-8, and an unencodable message would turn a 4xx into a crash."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def internal(wire: WireFormat, exc: Exception) -> ErrorResponse:
    return wire.error(500, printable(f"sandbox internal error: {type(exc).__name__}: {exc}"), rule=Rule.MALFORMED)


def store_unavailable(wire: WireFormat, message: str) -> ErrorResponse:
    """A 503 for a request the kept-state store could not serve: the server's trouble, not the loop's,
    and worth a retry, as an SDK does for a 503."""
    return wire.error(503, printable(message), rule=Rule.FAULT)


def too_large(wire: WireFormat, limit: int, size: int) -> ErrorResponse:
    return wire.error(
        413,
        f"sandbox: the request body is over {limit} bytes ({size} announced or read); the sandbox "
        "accepts at most that. Trim the conversation, or start the sandbox with a larger limit.",
        rule=Rule.TOO_LARGE,
    )


def gemini_alt(wire: WireFormat, query: str) -> str:
    """`sse` or `json` (the default): the response format a Gemini stream's `alt=` asks for."""
    values = urllib.parse.parse_qs(query, keep_blank_values=True).get("alt", ["json"])
    alt = values[-1]
    if alt not in ("sse", "json"):
        raise wire.error(  # [INF] Google's text for an unknown alt is not captured
            400,
            f"sandbox: alt={printable(alt)!r} is not a response format the sandbox serves: use alt=sse "
            "(what the SDKs send) for server-sent events, or alt=json (the default) for a JSON array.",
            rule=Rule.MALFORMED,
        )
    return alt


def budget_error(wire: WireFormat, scenario: Scenario, budget: int, step: int) -> ErrorResponse:
    return wire.error(
        400,
        f"sandbox: this conversation has used its budget of {budget} model requests (scenario "
        f"{scenario.name!r}, {step} model turns so far). A loop that never stops would bill you for "
        "every round: bound the loop (about 5 rounds) and make its error name the calls it saw.",
        rule=Rule.BUDGET,
        code="sandbox_budget_exhausted",
    )


def unknown_scenario(wire: WireFormat, model: str, known: str) -> ErrorResponse:
    """The provider's model-not-found 404, and which scenarios the model field may name."""
    return wire.error(
        404,
        f"{model_not_found(wire.name, printable(model))}\n\nsandbox: the model name picks the scenario. "
        f"Known scenarios: {known}. Run `sandbox scenarios` to read them.",
        rule=Rule.UNKNOWN_SCENARIO,
        param="model",
        code="model_not_found",
    )


def model_not_found(provider: str, model: str) -> str:
    """The provider's own words for a model it does not have (its 404)."""
    if provider == "anthropic":
        return f"model: {model}"
    if provider == "gemini":
        return (
            f"models/{model} is not found for API version v1beta, or is not supported for generateContent. "
            "Call ListModels to see the list of available models and their supported methods."
        )
    return f"The model `{model}` does not exist or you do not have access to it."


_NAME = operator.attrgetter("name")


def check_tools(wire: WireFormat, scenario: Scenario, conversation: Conversation) -> None:
    """Refuse a request that does not declare every tool the scenario calls: the strict echo mode's
    check (a real provider answers such a request in text)."""
    called = scenario.called
    if not called:
        return
    if called.issubset(map(_NAME, conversation.tools)):
        return
    raise missing_tools(wire, scenario, sorted(called.difference(map(_NAME, conversation.tools))))


def missing_tools(wire: WireFormat, scenario: Scenario, needed: list[str]) -> ErrorResponse:
    return wire.error(
        400,
        f"sandbox: scenario {scenario.name!r} calls {', '.join(needed)}, but the request does not "
        "declare those tools, so a real model could not call them. Send the scenario's tools "
        "with every request: tools=scenario.tools.",
        rule=Rule.MISSING_TOOL,
        param="tools",
        code="sandbox_missing_tool",
    )


def undeclared(step: Step, conversation: Conversation) -> list[str]:
    """The tools `step` calls that the request does not declare, in call order, each once."""
    declared = set(map(_NAME, conversation.tools))
    return list(dict.fromkeys(call.name for call in step.calls if call.name not in declared))
