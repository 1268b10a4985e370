from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import sandbox
from sandbox import skyl
from sandbox.engine import kept as kept_package
from sandbox.engine.kept import _store as kept
from tests.loopback import serving
from tests.stores import BACKENDS, redis_server

# No timing assertions (the project brief): hypothesis's default 200 ms deadline per example is one,
# and on a busy 2-core machine a mutated-body property took 307 ms once and 25 ms on its rerun.
settings.register_profile("no_deadline", deadline=None)
settings.load_profile("no_deadline")

PROVIDERS = sandbox.PROVIDERS


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """`sandbox serve`'s server in a thread, on a free loopback port: its base URL."""
    with serving(sandbox.Engine()) as base:
        yield base


def scenario_request(name: str) -> skyl.Request:
    scenario = sandbox.get_scenario(name)
    return skyl.Request(model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))


def scripted_run(name: str) -> Callable[[skyl.ToolCall], str]:
    """A tool runner that answers from the scenario's own tool_outputs."""
    outputs = sandbox.get_scenario(name).tool_outputs

    def run(call: skyl.ToolCall) -> str:
        return outputs[repr(sandbox.Call(call.name, dict(call.arguments)))]

    return run


def lesson_loop(
    client: skyl.Client,
    req: skyl.Request,
    run: Callable[[skyl.ToolCall], str],
    *,
    rounds: int = 8,
    stream: bool = False,
) -> skyl.Response:
    """The lesson's loop, bounded: the reference behaviour the sandbox must accept."""
    for _ in range(rounds):
        resp = skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {rounds} rounds")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, unknown under `-p no:xdist`
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`pytest -n auto` starts two workers a core: most of the suite's slow tests wait (on grading
    subprocesses, real retry delays, servers starting) rather than compute, so one a core leaves the
    cores half idle."""
    return 2 * (os.cpu_count() or 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what needs a toolchain (the `go` or `node` fixture) and the framework suite (slow: real agent
    frameworks' own loops), and run that suite last: the frameworks cache clients whose connections stay
    open, and an in-process pytest run of a later test (the graders') would report them."""
    for item in items:
        if {"go", "node"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.toolchain)
        if "tests/frameworks/" in item.nodeid:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: "tests/frameworks/" in item.nodeid)


@pytest.fixture(scope="session")
def go() -> str:
    """The Go toolchain. CI installs it (`.ci/run` sets SANDBOX_REQUIRE_GO=1, so there a missing
    toolchain fails instead of skipping)."""
    found = shutil.which("go")
    if found is None:
        if os.environ.get("SANDBOX_REQUIRE_GO"):
            pytest.fail("SANDBOX_REQUIRE_GO is set but `go` is not on PATH: install golang-go.")
        pytest.skip("go is not installed")
    return found


@pytest.fixture(scope="session")
def go_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which Go writes only under one temporary folder (shared by every test of the
    session, so the standard library compiles once) and fetches nothing (GOPROXY=off)."""
    scratch = tmp_path_factory.mktemp("go")
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GOCACHE": str(scratch / "cache"),
        "GOPATH": str(scratch / "path"),
        "CGO_ENABLED": "0",
    }


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The room page's screenshot of this run (tests/room/test_browser.py), where a person can look at it."""
    from tests.room_server import SCREENSHOTS

    for shot in SCREENSHOTS:
        terminalreporter.write_line(f"room page screenshot: {shot}")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `redis-server` for the session's tests (each test empties it first: `kept_store`)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def kept_store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test against each kept-state backend: every engine it makes keeps its state in a fresh
    store of that kind (`tests/stores.py`). Its URL, for a second engine or process to share."""
    url = "memory"
    if request.param != "memory" and request.node.get_closest_marker("memory_store"):
        pytest.skip("this test is about the memory store (its snapshots, or a store of one engine)")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'kept.db'}"
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")
        import redis

        with redis.Redis.from_url(url) as client:
            client.flushdb()
    if url != "memory":
        opened = kept_package.open_store

        def open_shared(given: str, max_entries: int, max_bytes: int) -> kept.Store:
            return opened(url if given == "memory" else given, max_entries, max_bytes)

        monkeypatch.setattr(kept_package, "open_store", open_shared)
    yield url


@pytest.fixture(params=["sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store that several engines and processes share, of each kind: its URL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kept.db'}"
    url: str = request.getfixturevalue("redis_url")
    import redis

    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url
