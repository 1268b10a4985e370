"""Bodies for the property tests of the readers and the answers: a catalogue loop played through skyl,
and every mutation of a decoded body that a one-field mistake makes. One copy of each, so the tests
all try the same kinds of mistakes.

Touches only what it is given: a client to play through, decoded JSON to copy and mutate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import sandbox
from sandbox import skyl

__all__ = ["copied", "mutants", "nodes", "play_loop"]


def play_loop(
    client: skyl.Client,
    request: skyl.Request,
    *,
    stream: bool,
    result: Callable[[skyl.ToolCall], str],
    rounds: int = 6,
) -> None:
    """Carry `request` through `client` as a tool loop (at most `rounds` requests), answering each call
    with `result(call)`; a provider error ends it like a finished loop (the journal keeps both)."""
    for _ in range(rounds):
        try:
            resp = skyl.collect_stream(client.stream(request)) if stream else client.complete(request)
        except sandbox.ProviderError:
            return
        if not resp.tool_calls():
            return
        request.messages.append(resp.message)
        request.messages.extend(skyl.tool_result_message(call.id, result(call)) for call in resp.tool_calls())


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path (keys and indexes) of every node of decoded JSON, the root's `()` first."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from nodes(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from nodes(inner, (*path, index))


def copied(data: Any) -> Any:
    """A deep copy of decoded JSON (faster than `copy.deepcopy`, and NaN stays NaN)."""
    return json.loads(json.dumps(data))


def mutants(data: Any, wrong: tuple[Any, ...]) -> Iterator[Any]:
    """`data` with one node changed, each way in turn: replaced by each value of `wrong`, dropped, and
    (a list's item) sent twice. Each mutant is a fresh copy."""
    for path in list(nodes(data))[1:]:
        *head, last = path
        for value in (*wrong, _DROP, _TWICE):
            mutant = copied(data)
            parent = mutant
            for key in head:
                parent = parent[key]
            if value is _DROP:
                del parent[last]
            elif value is _TWICE:
                if not isinstance(parent, list):
                    continue
                parent.insert(last, copied(parent[last]))
            else:
                parent[last] = value
            yield mutant


_DROP, _TWICE = object(), object()
