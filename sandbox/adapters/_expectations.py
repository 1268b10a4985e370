"""Strict expectations: what a journal shows the script foresaw and the client did not play out.

`unmet(engine, journal)` names each scripted step no request reached (in a scenario whose steps
are chosen by content, each step of a branch that began) and each request that no step answered
(the sandbox refused it: a 4xx or 5xx that no scripted fault explains). `sandbox.mock(strict=True)`
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
    played_by: dict[str, set[int]] = {}
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
            played_by.setdefault(exchange.scenario, set()).add(played)
    for name, last in reached.items():
        scenario = _scenario(engine, name)
        if scenario is not None and scenario.selects and name not in played_by:
            problems.append(f"scenario {name!r}: no request reached it")
        elif scenario is not None and scenario.selects:
            branches = _left_in_branches(scenario, played_by[name])
            if branches:
                listed = ", ".join(str(index) for index in branches)
                problems.append(
                    f"scenario {name!r}: step{'s' if len(branches) > 1 else ''} {listed} of {len(scenario.steps)} "
                    "never played (each follows the script's start or a step whose when matched)"
                )
        elif scenario is not None and last < len(scenario.steps) - 1:
            left = range(last + 1, len(scenario.steps))
            listed = ", ".join(str(index) for index in left)
            problems.append(
                f"scenario {name!r}: step{'s' if len(left) > 1 else ''} {listed} of {len(scenario.steps)} never played "
                f"(the last request reached step {last})"
                if last >= 0
                else f"scenario {name!r}: none of its {len(scenario.steps)} steps played (no request reached it)"
            )
    return problems


def _left_in_branches(scenario: Scenario, played: set[int]) -> list[int]:
    """The steps not played of the branches that began: the script's start (the steps before its first
    `when`), and each step whose `when` matched with the steps after it that have none. A branch
    whose `when` never matched is an alternative, not an expectation; a `respond` scenario has none."""
    left: list[int] = []
    began = True  # the script's start begins with the conversation
    for index, step in enumerate(scenario.steps):
        if step.when is not None:
            began = index in played
        if began and index not in played:
            left.append(index)
    return left


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
