"""skyl-sandbox: an offline, scripted fake LLM provider for learning and testing tool-calling loops.

Learners import the client as `from sandbox import skyl`. Everything else is mounted from here:

    sandbox.transport("single_call")      an httpx transport (sync and async)
    sandbox.httpx2_transport(...)         its twin for the official SDKs, which use httpx2
    sandbox.mock(...)                     intercept the providers' real hosts (respx + httpx2)
    sandbox.Fault("rate_limit", request=2)  a scripted fault, for Step(fault=...) or transport(faults=...)
    sandbox.SandboxApp(sandbox.Engine())  the ASGI app `sandbox serve` runs under uvicorn
    sandbox.serving("single_call")        `sandbox serve` in a thread, for a test: `with ... as server: server.url`

PYTEST_DONT_REWRITE: the package is a pytest plugin, imported before any session (and again by
sessions run in-process, as instructors' meta-tests do); it has no asserts to rewrite.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import skyl
    from ._exceptions import ProviderError, SandboxError, ScenarioError, ToolLoopError, UsageError
    from .adapters._asgi import SandboxApp
    from .adapters._mock import PROVIDER_HOSTS, SandboxMock, mock
    from .adapters._serve import serve
    from .adapters._serving import RunningSandbox, serving
    from .adapters._transport import Httpx2Transport, Journal, SandboxTransport, httpx2_transport, transport
    from .engine._catalogue import catalogue, get_scenario, load_scenario, load_scenarios
    from .engine._engine import DEFAULT_BUDGET, Engine, Exchange
    from .engine._scenario import Call, Scenario, Step, is_usable
    from .engine._when import When
    from .engine.faults import Fault, parse_faults
    from .wire import PROVIDERS, Conversation, Rule

__all__ = [
    "DEFAULT_BUDGET",
    "PROVIDERS",
    "PROVIDER_HOSTS",
    "Call",
    "Conversation",
    "Engine",
    "Exchange",
    "Fault",
    "Httpx2Transport",
    "Journal",
    "ProviderError",
    "Rule",
    "RunningSandbox",
    "SandboxApp",
    "SandboxError",
    "SandboxMock",
    "SandboxTransport",
    "Scenario",
    "ScenarioError",
    "Step",
    "ToolLoopError",
    "UsageError",
    "When",
    "catalogue",
    "get_scenario",
    "httpx2_transport",
    "is_usable",
    "load_scenario",
    "load_scenarios",
    "mock",
    "parse_faults",
    "serve",
    "serving",
    "skyl",
    "transport",
]

_LAZY = {
    "skyl": ".skyl",
    "ProviderError": "._exceptions",
    "SandboxError": "._exceptions",
    "ScenarioError": "._exceptions",
    "ToolLoopError": "._exceptions",
    "UsageError": "._exceptions",
    "SandboxApp": ".adapters._asgi",
    "serve": ".adapters._serve",
    "Httpx2Transport": ".adapters._transport",
    "Journal": ".adapters._transport",
    "SandboxTransport": ".adapters._transport",
    "httpx2_transport": ".adapters._transport",
    "transport": ".adapters._transport",
    "catalogue": ".engine._catalogue",
    "get_scenario": ".engine._catalogue",
    "load_scenario": ".engine._catalogue",
    "load_scenarios": ".engine._catalogue",
    "DEFAULT_BUDGET": ".engine._engine",
    "Engine": ".engine._engine",
    "Exchange": ".engine._engine",
    "Call": ".engine._scenario",
    "Scenario": ".engine._scenario",
    "Step": ".engine._scenario",
    "is_usable": ".engine._scenario",
    "When": ".engine._when",
    "Fault": ".engine.faults",
    "parse_faults": ".engine.faults",
    "PROVIDERS": ".wire",
    "Rule": ".wire",
    "Conversation": ".wire",
    "PROVIDER_HOSTS": ".adapters._mock",
    "SandboxMock": ".adapters._mock",
    "mock": ".adapters._mock",
    "RunningSandbox": ".adapters._serving",
    "serving": ".adapters._serving",
}
"""Where each public name lives: loaded on first use, so importing the package (as pytest does for
its plugin in every run) costs almost nothing."""


def __getattr__(name: str) -> Any:
    """Each public name loads its module on first use and is kept as an attribute, and `__version__`
    reads the installed metadata: a run that needs only the client, or only the plugin's options,
    imports no more than that."""
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name], __name__)
        value = module if module.__name__ == f"{__name__}.{name}" else getattr(module, name)
        globals()[name] = value
        return value
    if name == "__version__":  # the installed distribution's: pyproject.toml is its one source
        from importlib.metadata import version

        return version("skyl-sandbox")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
