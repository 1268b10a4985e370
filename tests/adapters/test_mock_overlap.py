"""`sandbox.mock()` nested, overlapping, in threads and in asyncio tasks: each request is answered by
the mount active in its own context, the patch goes away with the last mount, and no request ever
reaches a real host while a mount is active.

Every test replaces `socket.getaddrinfo` with a recorder that refuses: a request that escaped the
mock would have to resolve the provider's host name first, so "never called" proves that nothing
left the process, without any network.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

import sandbox

URL = "https://api.openai.com/v1/chat/completions"
HOSTS_LOOKED_UP: list[Any] = []


def _body(prompt: str = "hi") -> dict[str, Any]:
    return {"model": "plain_text", "messages": [{"role": "user", "content": prompt}]}


@pytest.fixture(autouse=True)
def no_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    HOSTS_LOOKED_UP.clear()

    def refuse(host: Any, *args: Any, **kwargs: Any) -> Any:
        HOSTS_LOOKED_UP.append(host)
        raise socket.gaierror(socket.EAI_NONAME, f"test: no DNS lookup allowed ({host})")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield HOSTS_LOOKED_UP
    assert HOSTS_LOOKED_UP == [], "a request tried to resolve a real host"


def _originals() -> tuple[Any, Any, Any]:
    return (httpx2.HTTPTransport.handle_request, httpx2.AsyncHTTPTransport.handle_async_request, httpx.HTTPTransport)


def test_mounts_stopped_out_of_order_restore_the_patch_and_answer_until_the_last_stops() -> None:
    before = _originals()
    first, second = sandbox.mock(), sandbox.mock()
    first.start()
    second.start()
    first.stop()  # the older one first: the newer must keep answering
    assert httpx2.post(URL, json=_body()).status_code == 200
    assert httpx.post(URL, json=_body("again")).status_code == 200
    assert (len(first.journal), len(second.journal)) == (0, 2)
    second.stop()
    assert _originals() == before, "httpx2 is still patched after the last mount stopped"
    with pytest.raises(sandbox.UsageError, match="with no sandbox mounted"):
        httpx2.post(URL, json=_body(), timeout=2)  # no dead mock answers: the plugin's real-API guard stops it


def test_nested_mounts_answer_innermost_first_then_the_outer_again() -> None:
    with sandbox.mock("plain_text") as outer:
        with sandbox.mock("plain_text") as inner:
            httpx2.post(URL, json=_body())
        httpx.post(URL, json=_body("second"))
    assert (len(outer.journal), len(inner.journal)) == (1, 1)


def test_eight_threads_of_a_hundred_mounts_each_answer_only_their_own() -> None:
    threads, mounts = 8, 100
    before = _originals()
    wrong: list[str] = []
    start = threading.Barrier(threads)

    def worker(number: int) -> None:
        start.wait(timeout=30)
        with httpx2.Client() as client:
            for index in range(mounts):
                with sandbox.mock() as mounted:
                    response = client.post(URL, json=_body(f"{number}/{index}"))
                    if response.status_code != 200 or len(mounted.journal) != 1:
                        wrong.append(f"thread {number} mount {index}: {response.status_code}, {len(mounted.journal)}")

    pool = [threading.Thread(target=worker, args=(number,)) for number in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in pool)
    assert wrong == []
    assert _originals() == before


def test_ten_concurrent_async_mounts_each_answer_their_own_task() -> None:
    tasks = 10

    async def task(number: int, mounted_all: asyncio.Event, count: list[int]) -> int:
        async with sandbox.mock() as mounted:
            count.append(number)
            if len(count) == tasks:
                mounted_all.set()
            await mounted_all.wait()  # all ten are mounted at once
            async with httpx2.AsyncClient() as client:
                response = await client.post(URL, json=_body(f"task {number}"))
            assert response.status_code == 200
            return len(mounted.journal)

    async def main() -> list[int]:
        mounted_all, count = asyncio.Event(), []
        return await asyncio.gather(*(task(number, mounted_all, count) for number in range(tasks)))

    assert asyncio.run(main()) == [1] * 10


def test_a_thread_without_a_mount_uses_the_only_one_active() -> None:
    """An SDK or a test may send from a worker thread: with one mount active, it answers."""
    answers: list[int] = []
    with sandbox.mock() as mounted:
        thread = threading.Thread(target=lambda: answers.append(httpx2.post(URL, json=_body()).status_code))
        thread.start()
        thread.join(timeout=30)
    assert (answers, len(mounted.journal)) == ([200], 1)


def test_a_thread_without_a_mount_while_two_are_active_elsewhere_is_refused_clearly() -> None:
    mounted, release = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with sandbox.mock():
            mounted.wait(timeout=30)
            release.wait(timeout=30)

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for thread in holders:
        thread.start()
    try:
        mounted.wait(timeout=30)
        response = httpx2.post(URL, json=_body())
    finally:
        release.set()
        for thread in holders:
            thread.join(timeout=30)
    assert response.status_code == 400
    assert "2 sandbox.mock() mounts are active in other threads or tasks" in response.json()["error"]["message"]


def test_one_mount_entered_twice_is_refused() -> None:
    mounted = sandbox.mock()
    with mounted, pytest.raises(sandbox.UsageError, match="already active"):
        mounted.start()
