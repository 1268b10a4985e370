"""Many threads and asyncio tasks on one in-process transport get the bytes a serial run got.

The history is the only state, so a request's answer may not depend on what else is in flight; the
shared pieces (the journal, the repeat guard, the lazily loaded wire formats) must hold under contention.
The one difference allowed is the ids an answer issues for itself, which carry the engine's number
for the request (docs/agents/scenarios.md, "Determinism"): compared with those ids masked, every byte is the same.
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
import threading
from dataclasses import dataclass

import httpx
import pytest

import sandbox
from sandbox import skyl
from tests.conftest import lesson_loop, scenario_request, scripted_run

SCENARIOS = ("single_call", "parallel_calls", "multi_step", "tool_error_recovery")
THREADS = 16
TASKS = 32


_ANSWER_IDS = re.compile(rb"(msg_01|chatcmpl-|resp_)[0-9A-Za-z]+")


def masked(chunks: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """The frames with every per-answer id (Anthropic `msg_01...`, `chatcmpl-...`, `resp_...`) masked."""
    return tuple(_ANSWER_IDS.sub(rb"\1*", chunk) for chunk in chunks)


@dataclass(frozen=True)
class Recorded:
    """One request of a serial run and the answer it got, frame by frame."""

    path: str
    body: bytes
    status: int
    chunks: tuple[bytes, ...]

    @property
    def response(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def stream(self) -> bool:
        return len(self.chunks) > 1


def _url(path: str) -> str:
    """The path as the client sent it: a Gemini stream asks for SSE in its query (`alt=sse`)."""
    return path + "?alt=sse" if path.endswith(":streamGenerateContent") else path


@functools.cache
def serial_run() -> tuple[Recorded, ...]:
    """Every request of the lesson loop for each provider, scenario and mode, one after another."""
    recorded: list[Recorded] = []
    for provider in sandbox.PROVIDERS:
        for name in SCENARIOS:
            for stream in (False, True):
                transport = sandbox.transport()
                client = skyl.Client(provider, transport=transport)
                lesson_loop(client, scenario_request(name), scripted_run(name), stream=stream)
                recorded.extend(
                    Recorded(_url(exchange.path), exchange.request_body, exchange.status, exchange.chunks)
                    for exchange in transport.journal
                )
    assert all(item.status == 200 for item in recorded)
    return tuple(recorded)


def replay_sync(http: httpx.Client, items: list[Recorded]) -> list[tuple[int, tuple[bytes, ...]]]:
    """Send each request and keep the body frame by frame, as the transport streamed it."""
    answers = []
    for item in items:
        request = http.build_request("POST", item.path, content=item.body, headers={"content-type": "application/json"})
        response = http.send(request, stream=True)
        try:
            answers.append((response.status_code, tuple(response.iter_bytes())))
        finally:
            response.close()
    return answers


async def replay_async(http: httpx.AsyncClient, items: list[Recorded]) -> list[tuple[int, tuple[bytes, ...]]]:
    answers = []
    for item in items:
        request = http.build_request("POST", item.path, content=item.body, headers={"content-type": "application/json"})
        response = await http.send(request, stream=True)
        try:
            answers.append((response.status_code, tuple([chunk async for chunk in response.aiter_bytes()])))
        finally:
            await response.aclose()
    return answers


def shuffled(items: tuple[Recorded, ...], seed: int) -> list[Recorded]:
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


@pytest.mark.slow
def test_threads_on_one_transport_get_the_serial_runs_bytes() -> None:
    recorded = serial_run()
    shared = sandbox.transport(journal_size=None)
    start = threading.Barrier(THREADS)
    results: dict[int, tuple[list[Recorded], list[tuple[int, tuple[bytes, ...]]]]] = {}
    failures: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            items = shuffled(recorded, seed)
            with httpx.Client(transport=shared, base_url="https://sandbox.test") as http:
                start.wait(timeout=10)
                results[seed] = (items, replay_sync(http, items))
        except BaseException as exc:  # surfaced below: a thread's exception would otherwise vanish
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    assert len(results) == THREADS
    for items, answers in results.values():
        for item, (status, chunks) in zip(items, answers, strict=True):
            assert (status, masked(chunks)) == (item.status, masked(item.chunks)), item.path
    assert len(shared.journal) == THREADS * len(recorded)
    assert not shared.journal.errors()


@pytest.mark.slow
def test_asyncio_tasks_on_one_transport_get_the_serial_runs_bytes() -> None:
    recorded = serial_run()
    shared = sandbox.transport(journal_size=None)

    async def main() -> list[tuple[list[Recorded], list[tuple[int, tuple[bytes, ...]]]]]:
        async with httpx.AsyncClient(transport=shared, base_url="https://sandbox.test") as http:

            async def task(seed: int) -> tuple[list[Recorded], list[tuple[int, tuple[bytes, ...]]]]:
                items = shuffled(recorded, seed)
                return items, await replay_async(http, items)

            return await asyncio.gather(*(task(seed) for seed in range(TASKS)))

    for items, answers in asyncio.run(main()):
        for item, (status, chunks) in zip(items, answers, strict=True):
            assert (status, masked(chunks)) == (item.status, masked(item.chunks)), item.path
    assert len(shared.journal) == TASKS * len(recorded)


def test_skyl_clients_in_threads_share_one_transport_and_each_finish_their_loop() -> None:
    """The learner's view: one transport (as a session fixture would share it), loops in parallel."""
    shared = sandbox.transport(journal_size=None)
    jobs = [(provider, name) for provider in sandbox.PROVIDERS for name in SCENARIOS] * 2
    expected = {}
    for provider, name in set(jobs):
        client = skyl.Client(provider, transport=sandbox.transport())
        expected[provider, name] = lesson_loop(client, scenario_request(name), scripted_run(name)).text()
    got: dict[int, str] = {}
    failures: list[BaseException] = []

    def worker(index: int, provider: str, name: str) -> None:
        try:
            client = skyl.Client(provider, transport=shared)
            got[index] = lesson_loop(client, scenario_request(name), scripted_run(name), stream=index % 2 == 1).text()
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(i, *job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    assert {index: got[index] for index in range(len(jobs))} == {index: expected[job] for index, job in enumerate(jobs)}
    assert not shared.journal.errors()
