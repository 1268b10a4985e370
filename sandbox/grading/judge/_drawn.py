"""The examples a generated property drew, kept for the rest of the run: a property graded on four wire
formats draws the same examples four times, since `derandomize` seeds hypothesis from the property's
own source, so the first run's examples are replayed on the other three instead of drawn again.

Drawing was the largest part of a generated test's cost in the grader (hypothesis's engine and the
strategies), and the same on every run: replaying calls the property's body with the same examples,
in the same order, and a failure reads as it did (the grader's own message; hypothesis's report of
the example is not shown to learners). A body that uses hypothesis's context (`note`, `assume`,
`event`, `target`) is drawn every time.

May touch: hypothesis's `settings` (this is one) and the `.hypothesis.inner_test` hook it documents
for wrapping each call of a property. The examples it keeps are the grader's own objects (scenarios
are frozen: tuples and read-only mappings), never seen by learner code, which gets data in a worker;
each is replayed only if its repr is still the one it had when drawn, else the property is drawn
afresh, so nothing one test did to its examples can reach the next test's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import CodeType
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

__all__ = ["Grading"]

_Key = tuple[str, str, CodeType, str, str]
_Drawn = list[tuple[dict[str, Any], str]]
_DRAWN: dict[_Key, _Drawn] = {}
"""Property -> the keyword arguments of each example it ran (with their repr then), in order, from its
first run that passed."""


class Grading(settings):
    """`settings` for a generated property that also replay what an identical property drew earlier in
    the run. Identical: the same function (code, file, name), the same strategies (by their repr, which
    spells out every argument), the same settings. A property that draws inside its body (`st.data()`)
    is drawn every time: what it draws there depends on what its body saw."""

    def __call__(self, test: Any) -> Any:
        test = super().__call__(test)
        handle = getattr(test, "hypothesis", None)
        strategies = getattr(handle, "_given_kwargs", None)
        inner: Callable[..., Any] | None = getattr(handle, "inner_test", None)
        code = getattr(inner, "__code__", None)
        if (
            inner is None
            or not isinstance(strategies, dict)
            or not isinstance(code, CodeType)
            or _needs_hypothesis(code)
        ):
            return test  # not a @given property, a hypothesis whose handle differs, or a body that notes
        key = (code.co_filename, inner.__qualname__, code, _described(strategies), repr(self))

        body = inner

        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> Any:
            if args or kwargs:  # a property given more than its strategies: nothing to replay
                return test(*args, **kwargs)
            drawn = _DRAWN.get(key)
            if drawn is not None and all(repr(kwargs) == then for kwargs, then in drawn):
                return _replay(body, drawn)
            _DRAWN.pop(key, None)
            return _record(test, handle, body, key)

        return run


def _described(strategies: dict[str, Any]) -> str:
    return repr(sorted((name, repr(strategy)) for name, strategy in strategies.items()))


def _record(test: Callable[[], Any], handle: Any, inner: Callable[..., Any], key: _Key) -> Any:
    """Run the property through hypothesis, noting each example's arguments and their repr; keep them
    once the run passed (a failing run stopped early, so it is no record of what the next would draw)."""
    examples: _Drawn = []
    replayable = [True]

    @functools.wraps(inner)  # the same digest, so hypothesis draws what it drew for `inner`
    def noting(*args: Any, **kwargs: Any) -> Any:
        if args or any(isinstance(value, st.DataObject) for value in kwargs.values()):
            replayable[0] = False
        else:
            examples.append((kwargs, repr(kwargs)))
        return inner(*args, **kwargs)

    handle.inner_test = noting
    try:
        result = test()
    finally:
        handle.inner_test = inner
    if replayable[0] and examples:
        _DRAWN.setdefault(key, examples)
    return result


def _replay(inner: Callable[..., Any], drawn: _Drawn) -> None:
    """The kept examples, in the order they first ran, each called as hypothesis called it; the first
    failure ends the property, as it does under `report_multiple_bugs=False`. Not through hypothesis's
    explicit examples: those pretty-print every example before running it, which cost as much as
    drawing did."""
    for kwargs, _ in drawn:
        inner(**kwargs)


_CONTEXT = frozenset({"note", "event", "target", "assume", "reject", "current_build_context"})
"""What a property's body may call that needs hypothesis around it: such a body is always drawn."""


def _needs_hypothesis(code: CodeType) -> bool:
    return bool(_CONTEXT & set(code.co_names)) or any(
        isinstance(const, CodeType) and _needs_hypothesis(const) for const in code.co_consts
    )
