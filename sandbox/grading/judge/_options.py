"""The command-line options of `pytest challenges/`, and their defaults.

    --impl DIR             grade DIR/<challenge folder name>.py instead of exercise.py
    --report PATH          Gradescope results.json, rewritten after every test
    --challenge-timeout S  the per-test deadline (the request budget is the main guard)
    --isolation MODE       where learner code runs: strict, process or auto
    --room URL --name NAME post each run's results to a workshop room (`sandbox room`)

May touch: pytest's option parser, nothing else. Read back by `sandbox.pytest_plugin` (which
registers them) and the session's `Harness`; the room's options are `sandbox.grading.judge._room_reporter`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..boundary._isolation import MODES
from ._room_reporter import add_options as room_options

__all__ = ["DEFAULT_RUN_DEADLINE", "DEFAULT_TIMEOUT", "add_options"]

DEFAULT_TIMEOUT = 5.0
DEFAULT_RUN_DEADLINE = 900.0


def add_options(parser: pytest.Parser) -> None:
    """Every option of `pytest challenges/` (the plugin's `pytest_addoption`)."""
    group = parser.getgroup("sandbox", "skyl-sandbox challenges")
    _add_option(
        parser,
        group,
        ("--impl", "--sandbox-impl"),
        dest="sandbox_impl",
        metavar="DIR",
        default=None,
        help="grade DIR/<challenge folder>.py (e.g. DIR/01_apply_tool_results.py) instead of exercise.py.",
    )
    _add_option(
        parser,
        group,
        ("--report", "--sandbox-report"),
        dest="sandbox_report",
        metavar="PATH",
        default=None,
        help="write challenge results to PATH in Gradescope's results.json format, updated after every test.",
    )
    room_options(group, lambda group, names, **attrs: _add_option(parser, group, names, **attrs))
    group.addoption(
        "--sandbox-cli-report",
        dest="sandbox_cli_report",
        metavar="PATH",
        default=None,
        help="as --report, for `sandbox check` and `sandbox watch`, which read it themselves: its path is not printed.",
    )
    group.addoption(
        "--sandbox-first-failure",
        dest="sandbox_first_failure",
        action="store_true",
        default=False,
        help="grade up to the first failing challenge test and run no more (what `sandbox watch` shows), without -x's "
        "banner.",
    )
    group.addoption(
        "--challenge-timeout",
        dest="sandbox_timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per-test deadline for challenge code (default {DEFAULT_TIMEOUT:g}).",
    )
    group.addoption(
        "--isolation",
        dest="sandbox_isolation",
        choices=MODES,
        default="auto",
        help="where learner code runs: strict = only under bubblewrap (refuse to grade without it), process = "
        "plain processes, auto (default) = bubblewrap when usable.",
    )
    group.addoption(
        "--run-deadline",
        dest="sandbox_run_deadline",
        type=float,
        default=DEFAULT_RUN_DEADLINE,
        metavar="SECONDS",
        help=f"deadline for the whole run: tests left after it fail at once (default {DEFAULT_RUN_DEADLINE:g}).",
    )
    group.addoption(
        "--sandbox-lanes",
        dest="sandbox_lanes",
        type=int,
        choices=(1, 2, 3),
        default=2,
        metavar="N",
        help="grade in up to N processes at once, each challenge whole in one, reported in order (default 2; at "
        "most one more than the machine has cores; one on a one-core machine, and whenever the run may stop early).",
    )
    group.addoption(
        "--grade-as",
        dest="sandbox_grade_as",
        metavar="USER",
        default=None,
        help="when grading as root, the unprivileged user learner code runs as (default: nobody).",
    )


def _add_option(parser: pytest.Parser, group: Any, names: Sequence[str], **attrs: Any) -> None:
    """Skip a short spelling another plugin already took; the `--sandbox-` spelling always works."""
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    taken = {name for g in groups if g is not None for option in g.options for name in option.names()}
    group.addoption(*[name for name in names if name not in taken], **attrs)
