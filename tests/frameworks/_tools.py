"""A scenario's tools as the plain Python functions frameworks want: real signatures, annotations and
docstrings (frameworks read them to build each tool's schema), answering from the scenario's own
tool outputs."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import sandbox

_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


def scenario_functions(name: str, calls: list[str] | None = None) -> list[Callable[..., str]]:
    """One function per tool of scenario `name`, each recording its calls in `calls` (if given)."""
    scenario = sandbox.get_scenario(name)
    return [_function(tool, scenario.tool_outputs, calls) for tool in scenario.tools]


def _function(tool: sandbox.Tool, outputs: dict[str, str], calls: list[str] | None) -> Callable[..., str]:
    def function(**arguments: Any) -> str:
        # A JSON number arrives as a float from frameworks that validate against `float`: 300.0 is the
        # script's 300.
        arguments = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in arguments.items()}
        call = repr(sandbox.Call(tool.name, arguments))
        if calls is not None:
            calls.append(call)
        return outputs.get(call, f"no result scripted for {call}")

    properties: dict[str, Any] = dict(tool.parameters.get("properties", {}))
    required = set(tool.parameters.get("required", []))
    annotations: dict[str, Any] = {key: _TYPES[value.get("type", "string")] for key, value in properties.items()}
    parameters = []
    for key in sorted(properties, key=lambda key: key not in required):
        default = inspect.Parameter.empty if key in required else None
        # A placeholder name, then the real one: six_rounds has a parameter named `from`, which
        # Python's own syntax (and so inspect.Parameter) refuses, while JSON Schema allows it.
        parameter = inspect.Parameter("_", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[key])
        object.__setattr__(parameter, "_name", key)
        parameters.append(parameter)
    function.__name__ = function.__qualname__ = tool.name
    function.__doc__ = tool.description or tool.name
    function.__annotations__ = {**annotations, "return": str}
    function.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return function
