"""Which fault answers a request: the engine's one hook into faults.

The history is the engine's only state, and a retry resends the same history, so a fault that played
on "request 2" would play on every retry of it. The plan therefore counts attempts: per sender and
per exact request body, the faults for that request play in order, one per attempt (`times` each),
and the attempt after them gets the script's answer. An error fault's retry hint holds, as on the
real API: a retry that arrives before the hint has passed gets the same error again, and counts as
no attempt (`Applied.early`). The count forgets a request after `window` seconds of quiet, so
re-running a suite against one `sandbox serve` plays its faults again.

The sender is the adapter's caller key (thread and task in process, told apart from another process's),
or for an HTTP adapter the client's address without its port: a client whose connection was cut
retries on a new connection. The counts live in the engine's store (`Records`, the engine's
`kept.Store`): a retry that reaches another process sharing the store is counted as the retry it is.

An adapter that knows when a request arrived says so (`arrived_at`): the hint is then judged on arrival,
as the real API judges it, rather than after the sandbox has read and checked the request, which on a
busy machine can take longer than a hint of tens of milliseconds and let an immediate retry through.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..._exceptions import ScenarioError
from ._spec import Fault
from ._statuses import sends_hint

__all__ = ["Applied", "FaultPlan", "Records", "arrived_at"]

T = TypeVar("T")
_PROCESS = secrets.token_hex(6)
"""Tells this process's in-process callers from another's of the same thread and task ids."""


class Records(Protocol):
    """Where attempt counts live: the engine's store (`kept.Store.record`), shared or not."""

    def record(self, key: str, change: Callable[[bytes | None], tuple[bytes, T]], ttl: float) -> T: ...


_ARRIVED: ContextVar[float | None] = ContextVar("sandbox_request_arrived", default=None)


@contextmanager
def arrived_at(moment: float) -> Iterator[None]:
    """The request being answered inside arrived at `moment` (`time.monotonic()`): retry hints are
    judged from then."""
    token = _ARRIVED.set(moment)
    try:
        yield
    finally:
        _ARRIVED.reset(token)


_HTTP_CLIENT = re.compile(r"^(?P<host>\[?[0-9A-Fa-f:.]+\]?):\d+$")


@dataclass(frozen=True)
class Applied:
    """A fault as it plays on one request: which, and on which attempt of that request."""

    fault: Fault
    attempt: int
    """1 for the first time this request arrived."""
    early: bool = False
    """The request came back before the previous answer's retry hint had passed."""


class FaultPlan:
    """The ad-hoc faults of a mount (`transport(faults=...)`) plus each scenario's own."""

    def __init__(self, faults: Sequence[Fault], *, budget: int, records: Records, window: float = 30.0) -> None:
        for fault in faults:
            if not isinstance(fault, Fault):
                raise ScenarioError(f"faults= takes sandbox.Fault objects or a spec string, got {fault!r}.")
        self.faults = tuple(faults)
        self.budget = budget
        for fault in self.faults:
            self.check_request(fault, where="faults=")
        self._window = window
        self._records = records

    def check_request(self, fault: Fault, *, where: str) -> None:
        """Refuse a request number that no conversation can reach within the budget."""
        if fault.request is not None and fault.request > self.budget:
            raise ScenarioError(
                f"{where} {fault!r}: request={fault.request} is past the budget of {self.budget} model "
                f"requests; use a request from 1 to {self.budget}, or raise budget=."
            )

    def pick(
        self, provider: str, request: int, step_faults: Sequence[Fault], client: str, digest: str
    ) -> Applied | None:
        """The fault for this attempt of request number `request`, if any. `step_faults` are the
        scenario's own: the playing step's fault and its request-numbered ones."""
        candidates = [
            fault
            for fault in (*self.faults, *step_faults)
            if fault.plays_on(provider) and (fault.request is None or fault.request == request)
        ]
        if not candidates:
            return None
        key = f"fault:{_sender(client)}\0{digest}"
        now = time.time()
        # A hint holds from when its error was made (the client sees it later still) to when the retry
        # arrived: a loop that waited the hint is never early, one that did not is judged at its word.
        moment = _ARRIVED.get()
        arrived = now if moment is None else now - max(0.0, time.monotonic() - moment)

        def change(value: bytes | None) -> tuple[bytes, Applied | None]:
            # (attempts seen, when last, the candidate whose hint holds or -1, until when)
            seen, last, held, until = json.loads(value) if value else (0, now, -1, 0.0)
            if seen and now - last > self._window:
                seen, held = 0, -1
            if 0 <= held < len(candidates) and arrived < until:
                return json.dumps([seen, now, held, until]).encode(), Applied(candidates[held], seen, early=True)
            seen += 1
            applied = _nth(candidates, seen)
            hint = (
                applied.fault.retry_after if applied is not None and sends_hint(provider, applied.fault.kind) else 0.0
            )
            held = candidates.index(applied.fault) if applied is not None and hint else -1
            return json.dumps([seen, now, held, now + hint]).encode(), applied

        return self._records.record(key, change, self._window)


def _nth(candidates: list[Fault], attempt: int) -> Applied | None:
    left = attempt
    for fault in candidates:
        if left <= fault.times:
            return Applied(fault, attempt)
        left -= fault.times
    return None


def _sender(client: str) -> str:
    match = _HTTP_CLIENT.match(client)
    return match["host"] if match else f"{_PROCESS}/{client}"
