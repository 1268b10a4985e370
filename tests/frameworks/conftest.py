"""The framework suite's ground rules: nothing leaves the machine, every framework runs unmodified.

Telemetry and tracing are switched off before any framework is imported (litellm would fetch its
model price list from the network at import time, openai-agents would upload traces), and a guard
fails any test in which something asks DNS for a name other than the loopback's.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

import sandbox
from tests.loopback import serving

_OFFLINE = {
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "DO_NOT_TRACK": "1",
    # litellm's async calls go through aiohttp by default, which mock() cannot see; httpx it can.
    "DISABLE_AIOHTTP_TRANSPORT": "True",
}
for _name, _value in _OFFLINE.items():
    os.environ[_name] = _value

BUDGET = 8
"""Model requests per conversation on the suite's sandboxes: six_rounds needs 7, runaway never stops."""
LIMIT = 7
"""The frameworks' own bound on model requests (or tool rounds): enough for six_rounds, below BUDGET."""

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}

THIRD_PARTY_WARNINGS = [
    # google-genai's async client subclasses aiohttp's session when aiohttp is installed (litellm brings it).
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
    # litellm's device-code login types, at import time.
    pytest.mark.filterwarnings("ignore:Items? .* (are|is) using the `ReadOnly` qualifier:UserWarning"),
    # litellm's streaming wrapper reads a pydantic attribute the deprecated way.
    pytest.mark.filterwarnings("ignore:Accessing the '(model_fields|model_computed_fields)' attribute on the instance"),
]
"""Warnings the frameworks raise on their own, which the project's `filterwarnings = error` would turn
into failures that say nothing about the sandbox."""


@pytest.fixture(scope="package", autouse=True)
def collect_the_frameworks_garbage() -> Iterator[None]:
    """After the suite, collect what the frameworks left behind with its connections open (cached
    clients in reference cycles), before a later test's garbage collection turns their
    ResourceWarnings into that test's failure."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture(autouse=True)
def no_names_but_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail if anything resolves a host name other than the loopback's (`sandbox.mock()` answers the
    real hosts' names without resolving them)."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in _LOOPBACK:
            asked.append(name)
            raise OSError(f"the framework suite resolves no names but the loopback's; asked for {name!r}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield asked
    assert asked == [], f"something tried to resolve {asked}"


@pytest.fixture(scope="package")
def server() -> Iterator[str]:
    """`sandbox serve` (its uvicorn server, in a thread) on a free port of 127.0.0.1: http://127.0.0.1:PORT."""
    with serving(sandbox.Engine(budget=BUDGET)) as base:
        yield base


T = TypeVar("T")


@pytest.fixture(scope="package")
def run_async() -> Iterator[Callable[[Coroutine[Any, Any, T]], T]]:
    """Run a coroutine on one event loop that lives for the whole suite, as an application's would:
    frameworks cache async HTTP clients (litellm's module-level one, for instance) that break on the
    next test's fresh loop from `asyncio.run`."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="framework-suite-loop", daemon=True)
    thread.start()

    def run(coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=300)

    yield run
    if "litellm" in sys.modules:
        run(sys.modules["litellm"].close_litellm_async_clients())
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


SCENARIOS = ["single_call", "parallel_calls", "multi_step", "six_rounds", "runaway"]


def expected_answer(name: str) -> str:
    """The scenario's scripted final answer, as the lesson's own loop gets it."""
    from sandbox import skyl
    from tests.conftest import lesson_loop, scenario_request, scripted_run

    client = skyl.Client("openai", transport=sandbox.transport())
    return lesson_loop(client, scenario_request(name), scripted_run(name)).text()


def check(name: str, run: Callable[[], str], limit_errors: tuple[type[BaseException], ...]) -> None:
    """A combination passes when the framework returns the scenario's scripted answer; on runaway,
    when it stops with its own limit error or the sandbox's budget error (one of `limit_errors`)."""
    if name == "runaway":
        with pytest.raises(limit_errors) as info:
            run()
        text = str(info.value)
        assert "budget" in text or "sandbox" not in text, text
        return
    assert run() == expected_answer(name)
