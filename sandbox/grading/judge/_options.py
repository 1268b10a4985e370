"""The command-line options of `pytest challenges/`, and their defaults.

    --impl DIR             grade DIR/<challenge folder name>.py instead of exercise.py
    --report PATH          Gradescope results.json, rewritten after every test
    --challenge-timeout S  the per-test deadline (the request budget is the main guard)
    --isolation MODE       where learner code runs: strict, process or auto
    --room URL --name NAME post each run's results to a workshop room (`sandbox room`)

Each also has a `--sandbox-` spelling (`--sandbox-impl`, `--sandbox-room-name`...), the one every
pytest run knows; the short ones above exist only in a run that grades challenges, so that an
unrelated project's pytest keeps its own `--report` and friends.

May touch: pytest's option parser, nothing else. Read back by `sandbox.pytest_plugin` (which
registers them), the session's `Harness` and the room's reporter. It imports nothing heavy: every pytest
run loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..boundary._isolation import MODES

__all__ = ["DEFAULT_RUN_DEADLINE", "DEFAULT_TIMEOUT", "ROOM_ENV", "ROOM_NAME_ENV", "add_options"]

DEFAULT_TIMEOUT = 5.0
DEFAULT_RUN_DEADLINE = 900.0
ROOM_ENV = "SANDBOX_ROOM"
ROOM_NAME_ENV = "SANDBOX_ROOM_NAME"


def add_options(parser: pytest.Parser, *, short: bool = False) -> None:
    """Every option of `pytest challenges/` in its `--sandbox-` spelling (the plugin's `pytest_addoption`);
    with `short`, their short spellings instead (`--impl`, `--report`...), those another plugin has not
    taken."""
    group = parser.getgroup("sandbox", "skyl-sandbox challenges")

    def add(group: Any, names: Sequence[str], **attrs: Any) -> None:
        _add_option(parser, group, [name for name in names if name.startswith("--sandbox-") != short], **attrs)

    add(
        group,
        ("--impl", "--sandbox-impl"),
        dest="sandbox_impl",
        metavar="DIR",
        default=None,
        help="grade DIR/<challenge folder>.py (e.g. DIR/01_apply_tool_results.py) instead of exercise.py.",
    )
    add(
        group,
        ("--report", "--sandbox-report"),
        dest="sandbox_report",
        metavar="PATH",
        default=None,
        help="write challenge results to PATH in Gradescope's results.json format, updated after every test.",
    )
    add(
        group,
        ("--room", "--sandbox-room"),
        dest="sandbox_room",
        metavar="URL",
        default=None,
        help=f"post each run's results to a workshop room (the URL `sandbox room` printed; or ${ROOM_ENV}).",
    )
    add(
        group,
        ("--name", "--sandbox-room-name"),
        dest="sandbox_room_name",
        metavar="NAME",
        default=None,
        help=f"your name in the room (or ${ROOM_NAME_ENV}).",
    )
    add(
        group,
        ("--sandbox-cli-report",),
        dest="sandbox_cli_report",
        metavar="PATH",
        default=None,
        help="as --report, for `sandbox check` and `sandbox watch`, which read it themselves: its path is not printed.",
    )
    add(
        group,
        ("--sandbox-first-failure",),
        dest="sandbox_first_failure",
        action="store_true",
        default=False,
        help="grade up to the first failing challenge test and run no more (what `sandbox watch` shows), without -x's "
        "banner.",
    )
    add(
        group,
        ("--challenge-timeout", "--sandbox-challenge-timeout"),
        dest="sandbox_timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per-test deadline for challenge code (default {DEFAULT_TIMEOUT:g}).",
    )
    add(
        group,
        ("--isolation", "--sandbox-isolation"),
        dest="sandbox_isolation",
        choices=MODES,
        default="auto",
        help="where learner code runs: strict = only under bubblewrap (refuse to grade without it), process = "
        "plain processes, auto (default) = bubblewrap when usable.",
    )
    add(
        group,
        ("--run-deadline", "--sandbox-run-deadline"),
        dest="sandbox_run_deadline",
        type=float,
        default=DEFAULT_RUN_DEADLINE,
        metavar="SECONDS",
        help=f"deadline for the whole run: tests left after it fail at once (default {DEFAULT_RUN_DEADLINE:g}).",
    )
    add(
        group,
        ("--sandbox-lanes",),
        dest="sandbox_lanes",
        type=int,
        choices=(1, 2, 3),
        default=2,
        metavar="N",
        help="grade in up to N processes at once, each challenge whole in one, reported in order (default 2; at "
        "most one more than the machine has cores; one on a one-core machine, and whenever the run may stop early).",
    )
    add(
        group,
        ("--grade-as", "--sandbox-grade-as"),
        dest="sandbox_grade_as",
        metavar="USER",
        default=None,
        help="when grading as root, the unprivileged user learner code runs as (default: nobody).",
    )


def _add_option(parser: pytest.Parser, group: Any, names: Sequence[str], **attrs: Any) -> None:
    """Add the spellings of `names` no plugin has taken yet (none left: nothing added)."""
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    taken = {name for g in groups if g is not None for option in g.options for name in option.names()}
    free = [name for name in names if name not in taken]
    if free:
        group.addoption(*free, **attrs)
