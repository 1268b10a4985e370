"""Two `sandbox serve` processes (standing in for two machines) behind nginx with deploy/nginx.conf,
sharing one Redis: learners' kept-state loops spread over both, and one machine killed mid-load
costs only the requests it was answering; their SDKs' retries land on the other, kept state intact."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import openai
import pytest

import sandbox
from tests.sdk_drivers import in_process_options, openai_responses_kept
from tests.site import lesson_site

pytestmark = pytest.mark.slow
LEARNERS = 6
"""Loops running at once: at most this many requests are in flight when a machine dies."""


def _expected() -> str:
    return openai_responses_kept("multi_step", **in_process_options("openai", sandbox.httpx2_transport()))


def _learner(base: str, key: str) -> Any:
    """A learner's SDK client: its own key, the SDK's default retries (2) on a 5xx or a dropped connection."""
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key)


def test_kept_state_loops_spread_over_two_machines_all_finish(tmp_path: Path) -> None:
    expected = _expected()
    with lesson_site(tmp_path) as site:
        answers = [openai_responses_kept("multi_step", client=_learner(site.base, f"sk-{n}")) for n in range(8)]
        served = site.answers()
    assert answers == [expected] * 8
    assert {status for status, _ in served} == {200}
    assert {upstream for _, upstream in served} == set(site.servers)  # both machines answered, turn by turn


def test_a_machine_killed_mid_load_costs_only_its_in_flight_requests(tmp_path: Path) -> None:
    expected = _expected()
    finished: list[str] = []
    failed: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()
    progress = threading.Condition(lock)

    def learner(number: int) -> None:
        while not stop.is_set():
            try:
                answer = openai_responses_kept("multi_step", client=_learner(site.base, f"sk-{number}"))
            except Exception as exc:  # noqa: BLE001 - every failure is counted, and the test says which
                with lock:
                    failed.append(exc)
                return
            with progress:
                finished.append(answer)
                progress.notify_all()

    def wait_for(count: int) -> None:
        with progress:
            assert progress.wait_for(lambda: len(finished) >= count or bool(failed), timeout=120), "loops stalled"

    with lesson_site(tmp_path) as site:
        threads = [threading.Thread(target=learner, args=(n,)) for n in range(LEARNERS)]
        for thread in threads:
            thread.start()
        try:
            wait_for(2 * LEARNERS)
            victim = next(iter(site.servers))
            before = len(site.answers())
            site.kill(victim)
            wait_for(len(finished) + 3 * LEARNERS)  # every learner, mid-loop at the kill, goes on
        finally:
            stop.set()
            for thread in threads:
                thread.join(120)
        served = site.answers()
    assert not failed, failed
    assert set(finished) == {expected}
    after = served[before:]
    lost = [status for status, _ in after if status != 200]
    assert len(lost) <= LEARNERS, f"only requests in flight on {victim} may fail: {lost}"
    assert all(status in (502, 504) for status in lost), lost
    survivor = next(address for address in site.servers if address != victim)
    assert all(upstream.endswith(survivor) for status, upstream in after[LEARNERS:] if status == 200)
