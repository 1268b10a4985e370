"""Strict expectations: what a journal shows the script foresaw and the client did not play out.

`unmet(engine, journal)` names each scripted step no request reached and each request that no step
answered (the sandbox refused it: a 4xx or 5xx that no scripted fault explains). `sandbox.mock(strict=True)`
and the `sandbox_mock` fixture fail with them. May touch: nothing; it reads the journal and replays
the conversations it holds against the engine's scenarios.
"""

from __future__ import annotations

from ..engine._engine import Engine
from ..engine._exchange import Exchange
from ..engine._replay import replay
from ..engine._scenario import Scenario
from ..wire import ErrorResponse, get_wire_format
from ._journal import Journal

__all__ = ["unmet"]


def unmet(engine: Engine, journal: Journal) -> list[str]:
    """One line for each unplayed stretch of a script and each request no step matched; empty when the
    journal shows every scripted step played and every request answered by one."""
    problems: list[str] = []
    reached: dict[str, int] = {}
    if engine.pinned is not None:
        reached[engine.pinned.name] = -1
    for number, exchange in enumerate(journal, start=1):
        if exchange.error is not None and exchange.fault is None:
            problems.append(
                f"request #{number} {exchange.method} {exchange.path} matched no step: {exchange.status} "
                f"{exchange.error.rule.value}: {exchange.error.message}"
            )
        played = _played(engine, exchange)
        if played is not None and exchange.scenario is not None:
            reached[exchange.scenario] = max(reached.get(exchange.scenario, -1), played)
    for name, last in reached.items():
        scenario = _scenario(engine, name)
        if scenario is not None and last < len(scenario.steps) - 1:
            left = range(last + 1, len(scenario.steps))
            listed = ", ".join(str(index) for index in left)
            problems.append(
                f"scenario {name!r}: step{'s' if len(left) > 1 else ''} {listed} of {len(scenario.steps)} never played "
                f"(the last request reached step {last})"
                if last >= 0
                else f"scenario {name!r}: none of its {len(scenario.steps)} steps played (no request reached it)"
            )
    return problems


def _scenario(engine: Engine, name: str) -> Scenario | None:
    if engine.pinned is not None and engine.pinned.name == name:
        return engine.pinned
    return engine.scenarios.get(name)


def _played(engine: Engine, exchange: Exchange) -> int | None:
    """The script step the exchange's answer played (its history replayed), or None: none played."""
    if exchange.turn is None or exchange.scenario is None or exchange.provider is None:
        return None
    scenario = _scenario(engine, exchange.scenario)
    if scenario is None or exchange.conversation is None:
        return None
    try:
        return replay(get_wire_format(exchange.provider), scenario, exchange.conversation).script_index
    except ErrorResponse:
        return None
