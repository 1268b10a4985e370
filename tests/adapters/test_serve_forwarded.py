"""`sandbox serve --forwarded-allow-ips`: behind a trusted proxy the sender (whom the repeat guard
counts per) is the client `X-Forwarded-For` names, so learners behind one proxy are never one
sender; from any other peer the header is ignored and the sender is the connection."""

from __future__ import annotations

from collections.abc import Callable

import httpx

import sandbox
from tests.loopback import serving

ASK = {
    "model": "single_call",
    "input": "What's the weather in Paris?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}],
}
BUDGET = 3
RUNAWAY = [200] * BUDGET + [400]
"""The same request resent by one sender: refused as a runaway once it passes the budget."""


def _resend(base: str, forwarded_for: Callable[[int], str], *, one_connection: bool) -> list[int]:
    """Send `ASK` `BUDGET + 1` times, each with the `X-Forwarded-For` given for its number; the statuses."""
    statuses = []
    with httpx.Client(base_url=base) as pooled:
        for number in range(BUDGET + 1):
            headers = {"x-forwarded-for": forwarded_for(number)}
            if one_connection:
                statuses.append(pooled.post("/v1/responses", json=ASK, headers=headers).status_code)
            else:
                statuses.append(httpx.post(f"{base}/v1/responses", json=ASK, headers=headers).status_code)
    return statuses


def test_learners_behind_a_trusted_proxy_are_each_their_own_sender() -> None:
    with serving(sandbox.Engine(budget=BUDGET), forwarded_allow_ips="127.0.0.1") as base:
        statuses = _resend(base, lambda number: f"203.0.113.{number + 1}:40000", one_connection=True)
    assert statuses == [200] * (BUDGET + 1)  # one proxy connection, four learners: no runaway


def test_a_learner_behind_a_trusted_proxy_is_one_sender_over_any_proxy_connection() -> None:
    with serving(sandbox.Engine(budget=BUDGET), forwarded_allow_ips="127.0.0.0/8") as base:
        statuses = _resend(base, lambda number: "198.51.100.7:51234", one_connection=False)
    assert statuses == RUNAWAY


def test_a_chain_of_proxies_names_the_first_untrusted_address() -> None:
    """A client may write its own X-Forwarded-For; the trusted proxy appends the address it saw."""
    with serving(sandbox.Engine(budget=BUDGET), forwarded_allow_ips="127.0.0.1") as base:
        statuses = _resend(base, lambda number: f"10.9.9.{number}, 198.51.100.7:51234", one_connection=True)
    assert statuses == RUNAWAY  # the forged first entries change nothing: one learner


def test_forwarded_headers_from_a_peer_not_trusted_are_ignored() -> None:
    with serving(sandbox.Engine(budget=BUDGET), forwarded_allow_ips="192.0.2.1") as base:
        statuses = _resend(base, lambda number: f"203.0.113.{number + 1}:40000", one_connection=True)
    assert statuses == RUNAWAY  # the sender is the connection, whatever the header says


def test_without_the_option_forwarded_headers_are_ignored() -> None:
    with serving(sandbox.Engine(budget=BUDGET)) as base:
        statuses = _resend(base, lambda number: f"203.0.113.{number + 1}:40000", one_connection=True)
    assert statuses == RUNAWAY
